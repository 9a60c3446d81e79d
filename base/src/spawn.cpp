// See spawn.hpp. posix_spawnp with RAII holders for the attribute and file-action objects and
// for pipe ends; captured output is read through poll() so that neither pipe can fill and block
// the child while we wait on the other.
#include "gridrun/base/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
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
    o.pid_ = -1;
    o.code_.reset();
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

Child spawn(const SpawnOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("spawn: empty command");
  const auto argv = c_strings(o.argv);
  const auto env_s = merged_env(o.env_set);
  const auto envp = c_strings(env_s);
  SpawnFiles files;
  posix_spawn_file_actions_addopen(&files.v, 0, "/dev/null", O_RDONLY, 0);
  if (!o.stdout_path.empty())
    posix_spawn_file_actions_addopen(&files.v, 1, o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (!o.stderr_path.empty())
    posix_spawn_file_actions_addopen(&files.v, 2, o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
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
  return Child(pid, o.new_process_group);
}

CapturedRun run_captured(const std::vector<std::string>& argv_s) {
  if (argv_s.empty()) throw std::invalid_argument("run_captured: empty command");
  Fd out_r, out_w, err_r, err_w;
  make_pipe(out_r, out_w);
  make_pipe(err_r, err_w);
  SpawnFiles fa;
  posix_spawn_file_actions_addopen(&fa.v, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa.v, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa.v, err_w.get(), 2);
  const auto argv = c_strings(argv_s);
  pid_t pid = -1;
  CapturedRun res;
  const int rc = ::posix_spawnp(&pid, argv[0], &fa.v, nullptr, argv.data(), environ);
  out_w.reset();
  err_w.reset();
  if (rc != 0) {
    res.err = argv_s[0] + ": " + errno_text(rc);
    return res;
  }
  res.started = true;
  Child child(pid, false);  // reaped (or killed and reaped) on every path out of here
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&res.out, &res.err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
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

IsolatedRun run_isolated(const std::function<std::string()>& fn, double timeout_s) {
  Fd r, w;
  make_pipe(r, w);
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + errno_text(errno));
  if (pid == 0) {
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
    std::string msg;
    int code = 0;
    try {
      msg = fn();
      code = msg.empty() ? 0 : 1;
    } catch (const std::exception& e) {
      msg = e.what();
      code = 1;
    } catch (...) {
      msg = "unknown exception";
      code = 1;
    }
    for (std::size_t off = 0; off < msg.size();) {
      const ssize_t n = ::write(w.get(), msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::_exit(code);
  }
  Child child(pid, false);  // SIGKILLed and reaped on every path out of here
  w.reset();
  IsolatedRun out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd p{r.get(), POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    const ssize_t n = ::read(r.get(), buf, sizeof buf);
    if (n > 0) {
      out.message.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF: the child has exited (or closed the pipe on its way out)
  }
  if (out.timed_out) {
    child.signal(SIGKILL);
    child.wait();
    out.message = "did not finish within " + std::to_string(static_cast<int>(timeout_s)) + " s";
    return out;
  }
  const int code = child.wait();
  if (code >= 128) {  // the child only _exits 0 or 1: anything from 128 is decode()'s signal
    out.signal = code - 128;
    out.message = std::string("crashed with signal ") + std::to_string(out.signal) + " (" +
                  signal_text(out.signal) + ")";
    return out;
  }
  out.ok = code == 0;
  if (!out.ok && out.message.empty()) out.message = "failed with exit code " + std::to_string(code);
  return out;
}

}  // namespace gridrun::base
