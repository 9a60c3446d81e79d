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
#pragma once

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
};

// What rank 0 reports when a job ended in a worker that goes on (a job that fails ends the worker
// instead: its exit code is the job's).
struct WorkerDone {
  std::string job_id;
  int code = 0;
  double rss_bytes = 0;   // rank 0's resident memory after the job, caches released
  bool retiring = false;  // the worker leaves now (its memory grew past the bound)
};

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
  explicit PipeEnd(int fd) : fd_(fd) {}
  PipeEnd(PipeEnd&& o) noexcept : fd_(o.fd_), buf_(std::move(o.buf_)) { o.fd_ = -1; }
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
  // nullopt on timeout; `eof` is set when every writer has gone and nothing is left.
  std::optional<std::string> read_line(double timeout_s, bool* eof);

 private:
  int fd_ = -1;
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
