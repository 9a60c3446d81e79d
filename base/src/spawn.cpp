// See spawn.hpp. posix_spawnp with RAII holders for the attribute and file-action objects and
// for pipe ends; captured output is read through poll() so that neither pipe can fill and block
// the child while we wait on the other.
#include "gridrun/base/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "gridrun/base/text.hpp"

extern char** environ;

namespace gridrun::base {

namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void release() { fd_ = -1; }  // the caller owns it now
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

void make_pipe(Fd& r, Fd& w) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + errno_text(errno));
  r.reset(fds[0]);
  w.reset(fds[1]);
}

// Owns one posix_spawn attribute or file-action object: initialised here, destroyed on every path.
template <typename T, int (*Init)(T*), int (*Destroy)(T*)>
struct PosixObject {
  T v;
  PosixObject() { Init(&v); }
  ~PosixObject() { Destroy(&v); }
  PosixObject(const PosixObject&) = delete;
  PosixObject& operator=(const PosixObject&) = delete;
};
using SpawnAttr = PosixObject<posix_spawnattr_t, posix_spawnattr_init, posix_spawnattr_destroy>;
using SpawnFiles =
    PosixObject<posix_spawn_file_actions_t, posix_spawn_file_actions_init, posix_spawn_file_actions_destroy>;

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// environ with the NAME=... entries of `set` replaced (or added).
std::vector<std::string> merged_env(const std::vector<std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (const auto& s : set) {
      const auto eq = s.find('=');
      if (eq != std::string::npos && kv.compare(0, eq + 1, s, 0, eq + 1) == 0) replaced = true;
    }
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

int decode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    reset();
    pid_ = o.pid_;
    group_ = o.group_;
    code_ = o.code_;
    out_fd_ = o.out_fd_;
    err_fd_ = o.err_fd_;
    o.pid_ = -1;
    o.code_.reset();
    o.out_fd_ = o.err_fd_ = -1;
  }
  return *this;
}

Child::~Child() { reset(); }

void Child::reset() noexcept {
  if (pid_ > 0 && !code_) {
    signal(SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  code_.reset();
  close_output();
}

void Child::close_output() {
  for (int* fd : {&out_fd_, &err_fd_})
    if (*fd >= 0) {
      ::close(*fd);
      *fd = -1;
    }
}

std::optional<int> Child::try_wait() {
  if (code_ || pid_ <= 0) return code_;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    if (errno == EINTR) return std::nullopt;
    code_ = 1;  // ECHILD: reaped elsewhere; count it as failed
  } else {
    code_ = decode(st);
  }
  return code_;
}

int Child::wait() {
  if (code_ || pid_ <= 0) return code_.value_or(1);
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &st, 0)) < 0 && errno == EINTR) {
  }
  code_ = r < 0 ? 1 : decode(st);
  return *code_;
}

void Child::signal(int sig) {
  if (pid_ <= 0 || code_) return;
  if (group_) ::kill(-pid_, sig);
  ::kill(pid_, sig);
}

// How a child's logs are opened: appended to, never through a link (a job's log linked to a file
// outside the run got its output there, issue 57) and never blocking (a FIFO in a log's place
// would block the spawn itself, which waits for the child's exec). The caller opens each once
// first with base::open_log_for_append, which replaces such a file with a warning; these flags
// are what holds when one appears between that and the spawn: the spawn fails, naming the job.
constexpr int kLogFlags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK;

Child spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("spawn: empty command");
  const auto argv = c_strings(o.argv);
  const auto env_s = merged_env(o.env_set);
  const auto envp = c_strings(env_s);
  SpawnFiles files;
  Fd out_r, out_w, err_r, err_w;
  posix_spawn_file_actions_addopen(&files.v, 0, "/dev/null", O_RDONLY, 0);
  if (o.pipe_stdout) {
    make_pipe(out_r, out_w);
    posix_spawn_file_actions_adddup2(&files.v, out_w.get(), 1);
  } else if (!o.stdout_path.empty()) {
    posix_spawn_file_actions_addopen(&files.v, 1, o.stdout_path.c_str(), kLogFlags, 0644);
  }
  if (o.pipe_stderr) {
    make_pipe(err_r, err_w);
    posix_spawn_file_actions_adddup2(&files.v, err_w.get(), 2);
  } else if (!o.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&files.v, 2, o.stderr_path.c_str(), kLogFlags, 0644);
  }
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&files.v, o.cwd.c_str());
  SpawnAttr attr;
  short flags = 0;
  if (o.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr.v, 0);
  }
  if (o.reset_signals) {
    // The parent may block signals for a signalfd; the child must start with none blocked and
    // default handlers, or it could not be stopped by them.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2, SIGQUIT})
      sigaddset(&defaults, sig);
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    posix_spawnattr_setsigmask(&attr.v, &none);
    posix_spawnattr_setsigdefault(&attr.v, &defaults);
  }
  posix_spawnattr_setflags(&attr.v, flags);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], &files.v, &attr.v, argv.data(), envp.data());
  if (rc != 0) throw std::runtime_error(o.argv[0] + ": cannot start: " + errno_text(rc));
  out_w.reset();
  err_w.reset();
  const int out_fd = out_r.get(), err_fd = err_r.get();
  Child child(pid, o.new_process_group, out_fd, err_fd);
  out_r.release();
  err_r.release();
  return child;
}

namespace {

// argv[0] as execve needs it: as given when it holds a '/', else the first executable of that
// name in PATH (looked up here, before fork: the child may only call async-signal-safe functions).
std::string exec_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > at ? dirs.substr(at, end - at) : ".";
    std::string cand = dir + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    at = end + 1;
  }
  return name;
}

// fork + setrlimit + execve: posix_spawn has no way to set a limit in the child. Returns the
// child's pid, or -1 with `err` set to exec's errno (reported through a close-on-exec pipe).
pid_t fork_exec_limited(const std::vector<std::string>& argv_s, const std::vector<std::string>& env_s,
                        std::uint64_t max_as, int out_fd, int err_fd, int& err) {
  const std::string path = exec_path(argv_s[0]);
  const auto argv = c_strings(argv_s);
  const auto envp = c_strings(env_s);
  Fd fail_r, fail_w;
  make_pipe(fail_r, fail_w);
  const pid_t pid = ::fork();
  if (pid < 0) {
    err = errno;
    return -1;
  }
  if (pid == 0) {
    // As the isolated copies: the check ends with its owner, even one killed with SIGKILL.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlimit cur{};
    ::getrlimit(RLIMIT_AS, &cur);
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = std::min<rlim_t>(cur.rlim_max, static_cast<rlim_t>(max_as));
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (::setrlimit(RLIMIT_AS, &lim) != 0 || devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out_fd, 1) < 0 ||
        ::dup2(err_fd, 2) < 0) {
      const int e = errno;
      (void)!::write(fail_w.get(), &e, sizeof e);
      ::_exit(127);
    }
    ::execve(path.c_str(), argv.data(), envp.data());
    const int e = errno;
    (void)!::write(fail_w.get(), &e, sizeof e);
    ::_exit(127);
  }
  fail_w.reset();
  int e = 0;
  ssize_t n;
  while ((n = ::read(fail_r.get(), &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof e)) {  // exec failed: reap the child, report why
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    err = e;
    return -1;
  }
  return pid;
}

}  // namespace

CapturedRun run_captured(const std::vector<std::string>& argv_s) {
  return run_captured(argv_s, CaptureOptions{});
}

CapturedRun run_captured(const std::vector<std::string>& argv_s, const CaptureOptions& opts) {
  if (argv_s.empty()) throw std::invalid_argument("run_captured: empty command");
  Fd out_r, out_w, err_r, err_w;
  make_pipe(out_r, out_w);
  make_pipe(err_r, err_w);
  const auto env_s = merged_env(opts.env_set);
  pid_t pid = -1;
  int rc = 0;
  if (opts.max_address_space > 0) {
    pid = fork_exec_limited(argv_s, env_s, opts.max_address_space, out_w.get(), err_w.get(), rc);
  } else {
    SpawnFiles fa;
    posix_spawn_file_actions_addopen(&fa.v, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa.v, out_w.get(), 1);
    posix_spawn_file_actions_adddup2(&fa.v, err_w.get(), 2);
    const auto argv = c_strings(argv_s);
    const auto envp = c_strings(env_s);
    rc = ::posix_spawnp(&pid, argv[0], &fa.v, nullptr, argv.data(), envp.data());
  }
  out_w.reset();
  err_w.reset();
  CapturedRun res;
  if (rc != 0 || pid <= 0) {
    res.err = argv_s[0] + ": " + errno_text(rc);
    return res;
  }
  res.started = true;
  Child child(pid, false);  // reaped (or killed and reaped) on every path out of here
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(opts.timeout_s, 0.0)));
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&res.out, &res.err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    int wait_ms = -1;
    if (opts.timeout_s > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        res.timed_out = true;
        child.signal(SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(std::min<long long>(left, 60'000));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  res.exit_code = child.wait();
  return res;
}

namespace {

// One item's frame on the pipe from a forked copy: kind (0 result, 1 error message), length, bytes.
struct FrameHeader {
  std::uint8_t kind;
  std::uint64_t size;
};

void write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  for (std::size_t off = 0; off < size;) {
    const ssize_t n = ::write(fd, p + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);  // the parent is gone or stopped listening: nothing left to do
    off += static_cast<std::size_t>(n);
  }
}

// The forked copy: items [first, n) in order, one frame each, then _exit(0). Never returns.
[[noreturn]] void isolated_child(pid_t parent, int out, std::size_t first, std::size_t n,
                                 const std::function<std::string(std::size_t)>& fn) {
  // The copy dies with its owner, even one killed with SIGKILL (a fuzz campaign that hit its
  // time limit left a copy running): nothing outlives its owner. getppid catches a parent that
  // died before prctl ran.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // A crash in the copy must end it by its signal, so the parent can name the crash. A handler
  // inherited from the caller would turn it into an exit code or run code not meant for a copy:
  // AddressSanitizer's SEGV/BUS handler prints a report and exits 1 (the ASan scenario run saw
  // libhdf5's bit-flip crash come back as "failed with exit code 1").
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
  // What a crashing library prints itself (glibc's "free(): invalid pointer") is not for the
  // user: the parent reports the crash in its own words.
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) ::dup2(devnull, STDERR_FILENO);
  for (std::size_t k = first; k < n; ++k) {
    std::string msg;
    FrameHeader h{0, 0};
    try {
      msg = fn(k);
    } catch (const std::exception& e) {
      msg = e.what();
      h.kind = 1;
    } catch (...) {
      msg = "unknown exception";
      h.kind = 1;
    }
    h.size = msg.size();
    write_all(out, &h.kind, sizeof h.kind);
    write_all(out, &h.size, sizeof h.size);
    write_all(out, msg.data(), msg.size());
  }
  ::_exit(0);
}

// Frames out of the bytes read so far: each complete one becomes results[next++].
void take_frames(std::string& buf, std::vector<IsolatedRun>& results, std::size_t& next, std::size_t end) {
  constexpr std::size_t kHead = sizeof(std::uint8_t) + sizeof(std::uint64_t);
  std::size_t pos = 0;
  while (next < end && buf.size() - pos >= kHead) {
    std::uint8_t kind = 0;
    std::uint64_t size = 0;
    std::memcpy(&kind, buf.data() + pos, sizeof kind);
    std::memcpy(&size, buf.data() + pos + sizeof kind, sizeof size);
    if (buf.size() - pos - kHead < size) break;
    IsolatedRun& r = results[next++];
    r.ok = kind == 0;
    r.message.assign(buf, pos + kHead, size);
    pos += kHead + size;
  }
  buf.erase(0, pos);
}

// One range [next, end) of the items, worked by one forked copy at a time: a copy reads its
// frames until it exits, crashes or an item takes longer than the timeout; the item it was on
// then is reported as such and a new copy goes on from the next one.
struct Lane {
  std::size_t next = 0, end = 0;
  Fd r;
  std::unique_ptr<Child> child;
  std::string buf;
  std::chrono::steady_clock::time_point deadline;

  void start(pid_t parent, std::vector<IsolatedRun>& results,
             const std::function<std::string(std::size_t)>& fn, std::chrono::duration<double> per_item) {
    Fd w;
    make_pipe(r, w);
    std::fflush(nullptr);  // nothing buffered twice
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + errno_text(errno));
    if (pid == 0) isolated_child(parent, w.get(), next, end, fn);
    child = std::make_unique<Child>(pid, false);  // SIGKILLed and reaped on every path out
    w.reset();
    buf.clear();
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(per_item);
    (void)results;
  }

  // The copy is gone (EOF) or overdue: reap it and name the item it was on, if any.
  void finish(std::vector<IsolatedRun>& results, bool timed_out, double timeout_s) {
    if (timed_out) {
      child->signal(SIGKILL);
      child->wait();
    }
    const int code = timed_out ? 0 : child->wait();
    child.reset();
    r.reset();
    if (next >= end) return;
    IsolatedRun& culprit = results[next++];
    culprit.ok = false;
    culprit.no_answer = true;
    if (timed_out) {
      culprit.timed_out = true;
      culprit.message = "did not finish within " + std::to_string(static_cast<int>(timeout_s)) + " s";
    } else if (code >= 128) {  // the copy only _exits 0..3: anything from 128 is a signal
      culprit.signal = code - 128;
      culprit.message = std::string("crashed with signal ") + std::to_string(culprit.signal) + " (" +
                        signal_text(culprit.signal) + ")";
    } else {
      culprit.message = "exited with code " + std::to_string(code) + " before it finished";
    }
  }
};

}  // namespace

std::vector<IsolatedRun> run_isolated_each(std::size_t n, const std::function<std::string(std::size_t)>& fn,
                                           double timeout_s, std::size_t copies) {
  std::vector<IsolatedRun> results(n);
  if (n == 0) return results;
  // Contiguous ranges, one per copy working at a time (a small pool: the reads are CPU-bound).
  copies = std::max<std::size_t>(1, std::min(copies, n));
  std::vector<Lane> lanes(copies);
  for (std::size_t k = 0; k < copies; ++k) {
    lanes[k].next = n * k / copies;
    lanes[k].end = n * (k + 1) / copies;
  }
  const pid_t parent = ::getpid();
  const auto per_item = std::chrono::duration<double>(timeout_s);
  char chunk[65536];
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Lane*> live;
    auto soonest = std::chrono::steady_clock::time_point::max();
    for (auto& lane : lanes) {
      if (!lane.child && lane.next < lane.end) lane.start(parent, results, fn, per_item);
      if (!lane.child) continue;
      fds.push_back(pollfd{lane.r.get(), POLLIN, 0});
      live.push_back(&lane);
      soonest = std::min(soonest, lane.deadline);
    }
    if (live.empty()) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(soonest - std::chrono::steady_clock::now());
    const int pr =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(left.count(), 0, 1000)));
    if (pr < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + errno_text(errno));
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < live.size(); ++k) {
      Lane& lane = *live[k];
      if (pr > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t got = ::read(lane.r.get(), chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {  // EOF: the copy has exited (or closed the pipe on its way out)
          lane.finish(results, false, timeout_s);
          continue;
        }
        lane.buf.append(chunk, static_cast<std::size_t>(got));
        const std::size_t before = lane.next;
        take_frames(lane.buf, results, lane.next, lane.end);
        if (lane.next != before)
          lane.deadline = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(per_item);
      } else if (now >= lane.deadline) {
        lane.finish(results, true, timeout_s);
      }
    }
  }
  return results;
}

IsolatedRun run_isolated(const std::function<std::string()>& fn, double timeout_s) {
  auto one = run_isolated_each(
      1,
      [&](std::size_t) {
        std::string msg = fn();
        if (!msg.empty()) throw std::runtime_error(msg);
        return std::string();
      },
      timeout_s);
  return std::move(one[0]);
}

}  // namespace gridrun::base
