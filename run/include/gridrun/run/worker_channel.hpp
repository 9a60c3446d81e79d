// The control channel of a warm worker: how `gridrun run` hands the next job to the ranks of a
// job that has finished, and how they say that a job ended (docs/scheduler.md, "Warm launches").
//
// Why named pipes in a folder of the run directory: mpirun closes every descriptor but 0-2 in the
// ranks it starts, so nothing inherited can reach them; a path can. One task pipe per rank (each
// rank blocks in poll() on its own, so an idle worker uses no CPU: a rank waiting in an MPI
// collective spins), one done pipe that rank 0 writes. The launcher opens every pipe read-write
// before it starts the worker, so no open ever blocks, and it is the only writer of the task pipes:
// when it closes them (retiring the worker) or dies (even SIGKILLed), every rank reads end-of-file
// and leaves. Messages are one JSON line each, far below PIPE_BUF, so each write is atomic.
//
// Why the done pipe is not trusted (issue 57): any process of the user can write it. A forged done
// line for a running job made the launcher hand the busy worker another job and shifted every later
// message to the wrong job; 49 MiB without a line end were buffered whole. So a line is at most
// kMaxDoneLineBytes, and a done message counts only when it carries the ticket the launcher gave
// that worker for that job (a random secret sent on the task pipe, or in the environment for the
// job the worker was started with) and rank 0's pid is one of the worker's ranks (check_done).
// Anything else retires the worker and its job is tried again cold (scheduler/executor.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gridrun::run {

// One job for a warm worker: what changes from job to job on the same ranks. Everything else of
// the worker's command line (output folder, owner, memory cap) applies to every job alike.
struct WorkerTask {
  std::string job_file;        // absolute path of runs/<name>/jobs/<id>.json
  bool resume = false;         // --resume: continue from the job's checkpoint
  double launched_at = 0;      // when the launcher sent it (seconds since the epoch)
  std::string heartbeat_file;  // --heartbeat for this job ("" = none)
  // The job's logs: every rank points its stdout and stderr there (appending) for this job, as
  // mpirun does for a cold job ("" = keep the worker's).
  std::string log_out, log_err;
  std::string ticket;  // echoed in this job's done message (new_worker_ticket)
};

// What rank 0 reports when a job ended in a worker that goes on (a job that fails ends the worker
// instead: its exit code is the job's).
struct WorkerDone {
  std::string job_id;
  int code = 0;
  double rss_bytes = 0;   // rank 0's resident memory after the job, caches released
  bool retiring = false;  // the worker leaves now (its memory grew past the bound)
  std::string ticket;     // the finished job's ticket (WorkerTask::ticket, or kWorkerTicketEnv)
  int pid = 0;            // rank 0's pid
};

// The environment variable holding the ticket of the job a worker is started with (mpirun passes
// its environment to its local ranks; a command line is readable by every user).
inline constexpr const char* kWorkerTicketEnv = "GRIDRUN_WORKER_TICKET";
// Longest line read from a done pipe (a done message is about 200 bytes) and from a task pipe (a
// task holds four paths, each up to PATH_MAX).
inline constexpr std::size_t kMaxDoneLineBytes = 4096;
inline constexpr std::size_t kMaxTaskLineBytes = std::size_t{64} * 1024;

// A fresh ticket: 32 hex digits from getrandom. Throws std::runtime_error when none can be had.
std::string new_worker_ticket();

// Why the launcher must not believe `d` from the worker running `job_id` with `ticket`, whose ranks
// are `rank_pids` (mpirun's children); "" when it is that worker's message about that job.
// std::nullopt: the launcher cannot know its ranks' pids (the Slurm task body: srun starts them on
// the step's nodes); the ticket, a secret only it and that worker hold, then decides alone.
std::string check_done(const WorkerDone& d, const std::string& job_id, const std::string& ticket,
                       const std::optional<std::vector<int>>& rank_pids);

std::string encode(const WorkerTask& t);  // one line, '\n'-terminated
std::string encode(const WorkerDone& d);
// Throw std::runtime_error naming the field on a malformed line.
WorkerTask decode_task(const std::string& line);
WorkerDone decode_done(const std::string& line);

// The pipes of a worker folder.
std::string worker_task_pipe(const std::string& dir, int rank);  // <dir>/task.<rank>
std::string worker_done_pipe(const std::string& dir);            // <dir>/done
// Whether `name` is one of the pipes above ("task.<rank>" or "done"): what the launcher removes
// from a worker's folder, and nothing else (base::remove_own_entries).
bool is_worker_pipe_name(const std::string& name);

// One end of a named pipe, closed by the destructor.
class PipeEnd {
 public:
  PipeEnd() = default;
  // `max_line`: the longest line read_line accepts (its '\n' not counted).
  PipeEnd(int fd, std::size_t max_line) : fd_(fd), max_line_(max_line) {}
  PipeEnd(PipeEnd&& o) noexcept : fd_(o.fd_), max_line_(o.max_line_), buf_(std::move(o.buf_)) { o.fd_ = -1; }
  PipeEnd& operator=(PipeEnd&& o) noexcept;
  PipeEnd(const PipeEnd&) = delete;
  PipeEnd& operator=(const PipeEnd&) = delete;
  ~PipeEnd() { close(); }

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void close();
  // Writes one whole message; false when nobody reads the pipe any more (EPIPE) or it is closed.
  bool write_line(const std::string& line);
  // The next whole line without its '\n'. timeout_s < 0 waits for ever, 0 does not wait.
  // nullopt on timeout; `eof` is set when every writer has gone and nothing is left. Throws
  // std::runtime_error once more than max_line bytes came without a line end (nothing is buffered
  // past that: the channel is then of no further use).
  std::optional<std::string> read_line(double timeout_s, bool* eof);

 private:
  [[noreturn]] void too_long();

  int fd_ = -1;
  std::size_t max_line_ = kMaxDoneLineBytes;
  std::string buf_;  // bytes read past the last whole line
};

// The launcher's side: makes `dir` with one task pipe per rank and the done pipe, all opened
// read-write (no open blocks; the launcher is the task pipes' only writer). Throws
// std::runtime_error naming the path.
struct WorkerPipes {
  std::vector<PipeEnd> tasks;  // by rank
  PipeEnd done;
};
WorkerPipes make_worker_pipes(const std::string& dir, int ranks);

// A rank's side: its task pipe to read and, on rank 0, the done pipe to write. Throws
// std::runtime_error naming the path when a pipe is missing.
struct WorkerInbox {
  PipeEnd task;
  PipeEnd done;  // rank 0 only
};
WorkerInbox open_worker_inbox(const std::string& dir, int rank);

}  // namespace gridrun::run
