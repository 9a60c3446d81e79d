// Starting processes: the one posix_spawn wrapper of gridrun, for the local executor (mpirun in
// its own process group, output to log files) and for the Slurm client calls (output captured).
//
// Why posix_spawn and not fork/popen: no shell (user arguments are never re-parsed), no copy of a
// large parent, and every handle (pipes, attributes, the child itself) owned by an RAII object so
// that no fd or zombie is left on any path, exceptions included.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gridrun::base {

struct SpawnOptions {
  std::vector<std::string> argv;         // argv[0] is looked up in PATH
  std::vector<std::string> env_set;      // "NAME=value" entries that replace or add to environ
  std::string stdout_path, stderr_path;  // appended to (created 0644); empty: inherited
  bool new_process_group = false;        // the child leads its own group (signal it as a whole)
  bool reset_signals = false;            // empty signal mask, default dispositions in the child
  // Instead of a path: the child's stdout / stderr is a pipe whose read end the Child owns
  // (Child::stdout_fd / stderr_fd), for a parent that reads its output as it comes (gridrun-exec).
  bool pipe_stdout = false, pipe_stderr = false;
  std::string cwd;  // the child's working directory; empty: the parent's
};

// A started child. Reaped exactly once; the destructor SIGKILLs (its group, when it leads one)
// and reaps it if it is still running, so no child outlives its owner by unwinding.
class Child {
 public:
  Child() = default;
  Child(int pid, bool group) : pid_(pid), group_(group) {}
  Child(int pid, bool group, int out_fd, int err_fd)
      : pid_(pid), group_(group), out_fd_(out_fd), err_fd_(err_fd) {}
  Child(Child&& o) noexcept { *this = std::move(o); }
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  int pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !code_; }
  // Exit code once ended (128+N when killed by signal N), without blocking.
  std::optional<int> try_wait();
  int wait();            // blocks until it ended
  void signal(int sig);  // to the child (and its group when it leads one)
  // The read ends of SpawnOptions::pipe_stdout / pipe_stderr (-1 without), closed with the Child;
  // close_output() closes them early (after end-of-file).
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  void close_output();

 private:
  void reset() noexcept;  // kill and reap if still running; then empty (destructor, move-assign)
  int pid_ = -1;
  bool group_ = false;
  std::optional<int> code_;
  int out_fd_ = -1, err_fd_ = -1;
};

// Starts a child; throws std::runtime_error "ARGV0: cannot start: CAUSE".
Child spawn(const SpawnOptions& opts);

struct CapturedRun {
  int exit_code = -1;  // exit status, or 128 + signal number
  std::string out, err;
  bool started = false;    // false when the program could not be executed (e.g. not installed)
  bool timed_out = false;  // killed (SIGKILL) for running past CaptureOptions::timeout_s
};
// Runs argv with stdin from /dev/null, captures stdout and stderr separately, waits.
CapturedRun run_captured(const std::vector<std::string>& argv);

// Bounds for a child that reads input gridrun does not control (the planner's model check: a
// model file could ask LibTorch for any amount of memory, or a forward could never end).
struct CaptureOptions {
  std::vector<std::string> env_set;  // "NAME=value" entries that replace or add to environ
  double timeout_s = 0;              // > 0: SIGKILL the child past this many seconds
  // > 0: the child's RLIMIT_AS (soft and hard; never above the caller's own hard limit), set in
  // the child between fork and exec, so no allocation of the program escapes it. An allocation
  // past it fails in the child (std::bad_alloc, a failed mmap), never in the caller.
  std::uint64_t max_address_space = 0;
};
CapturedRun run_captured(const std::vector<std::string>& argv, const CaptureOptions& opts);

// Runs `fn` in a forked copy of this process and reports how it ended, so that code which may
// crash on hostile input (libhdf5 1.10 on a bit-flipped file: SIGSEGV, abort in free()) takes only
// the copy down. The one place gridrun forks without exec: the point is to run the same library
// code on the same data, isolated. `fn` returns "" for success or a message; an exception in it is
// a failure with its what(). The child never returns: it _exits after fn (no atexit handlers, no
// flushing of the parent's buffers) and is SIGKILLed past `timeout_s`.
struct IsolatedRun {
  bool ok = false;
  int signal = 0;  // the signal that ended the child (crash), else 0
  bool timed_out = false;
  // The copy ended before fn returned (a crash, a hang, or an exit from inside fn: a sanitizer's
  // report, a library's exit()): fn gave no answer at all, as opposed to a message or what().
  bool no_answer = false;
  std::string message;  // fn's message or what(), or what went wrong
};
IsolatedRun run_isolated(const std::function<std::string()>& fn, double timeout_s);

// The same for many items in one forked copy: fn(k) for k = 0..n-1 in order, each returning its
// result bytes (or throwing: a failure with its what()), passed back to the parent as one frame
// each. A copy that crashes or hangs on item k costs only item k (its IsolatedRun says how it
// ended) and a new copy goes on from k+1, so n reads cost one fork, not n. `timeout_s` bounds each
// item, not the whole batch. On success IsolatedRun::message holds fn(k)'s bytes. With copies > 1
// the items are split into that many contiguous ranges worked at the same time, one copy each (a
// small pool for CPU-bound reads; results keep the items' order).
std::vector<IsolatedRun> run_isolated_each(std::size_t n, const std::function<std::string(std::size_t)>& fn,
                                           double timeout_s, std::size_t copies = 1);

}  // namespace gridrun::base
