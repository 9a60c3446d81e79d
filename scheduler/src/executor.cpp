// The local executor: one `mpirun` per job, bound to the job's cores with a rankfile.
//
// Findings with Open MPI 4.1.4 (documented in docs/scheduler.md) that shaped this file:
// - `--cpu-set 0,1 --bind-to core` with -np 2 leaves each rank on both cores ("not bound"), and
//   `--cpu-set` conflicts with `--map-by core:PE=N`; a rankfile with physical ids
//   (`--mca rmaps_rank_file_physical 1`, `rank i=<host> slot=a-b`) binds each rank to its own cores.
// - SIGTERM to mpirun does not reach the ranks promptly ("Abort is in progress") and the job can
//   hang; SIGTERM sent to the ranks themselves (mpirun's children) lets them checkpoint, exit 75,
//   and mpirun then exits 75. So interrupt() signals the ranks.
// - SIGKILL of mpirun leaves its ranks running: they are found later by their command line
//   (processes_with_arg) when the next `gridrun run` reconciles.
// - Nothing but gridrun itself can notice that gridrun was SIGKILLed (no handler runs, and mpirun
//   sits in its own process group), so each job gets --owner-pid: the ranks watch gridrun's pid
//   and checkpoint and exit 75 when it is gone; mpirun exits with them.
#include "gridrun/scheduler/executor.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace gridrun::scheduler {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<int> children_of(int pid) {
  std::vector<int> out;
  std::istringstream is(read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  int c;
  while (is >> c) out.push_back(c);
  if (!out.empty()) return out;
  // Kernels without CONFIG_PROC_CHILDREN: scan /proc for the parent id.
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const int p = std::atoi(e->d_name);
    if (p <= 0) continue;
    const std::string stat = read_file("/proc/" + std::string(e->d_name) + "/stat");
    const auto rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream ss(stat.substr(rp + 2));
    char state;
    int ppid = 0;
    ss >> state >> ppid;
    if (ppid == pid) out.push_back(p);
  }
  closedir(d);
  return out;
}

std::string comm_of(int pid) {
  std::string c = read_file("/proc/" + std::to_string(pid) + "/comm");
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
  return c;
}

// RAII for the attribute and file-action objects of posix_spawn.
struct SpawnAttr {
  posix_spawnattr_t a;
  SpawnAttr() { posix_spawnattr_init(&a); }
  ~SpawnAttr() { posix_spawnattr_destroy(&a); }
};
struct SpawnFiles {
  posix_spawn_file_actions_t f;
  SpawnFiles() { posix_spawn_file_actions_init(&f); }
  ~SpawnFiles() { posix_spawn_file_actions_destroy(&f); }
};

// One child process. Reaped exactly once; killed and reaped in the destructor if still alive.
class Process : public RunningJob {
 public:
  explicit Process(pid_t pid) : pid_(pid) {}
  ~Process() override {
    if (done_) return;
    kill();
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
  }
  int pid() const override { return pid_; }
  std::optional<int> try_wait() override {
    if (done_) return code_;
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == 0) return std::nullopt;
    if (r < 0) {
      if (errno == EINTR) return std::nullopt;
      code_ = 1;  // ECHILD: reaped elsewhere; treat as failed
    } else {
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    done_ = true;
    return code_;
  }
  void interrupt() override {
    if (done_) return;
    const auto kids = children_of(pid_);
    if (kids.empty()) {
      ::kill(-pid_, SIGKILL);  // ranks not started yet: nothing to checkpoint
      return;
    }
    for (int k : kids) ::kill(k, SIGTERM);
  }
  void kill() override {
    if (done_) return;
    for (int k : children_of(pid_)) ::kill(k, SIGKILL);
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }

 private:
  pid_t pid_;
  bool done_ = false;
  int code_ = 0;
};

class LocalExecutor : public Executor {
 public:
  const char* name() const override { return "local"; }

  std::vector<std::string> command(const LaunchSpec& s) const override {
    std::vector<std::string> a{"mpirun", "-np", std::to_string(s.req.ranks)};
    if (::geteuid() == 0) a.push_back("--allow-run-as-root");
    if (s.oversubscribe) a.push_back("--oversubscribe");
    if (!s.core_ids.empty()) {
      a.insert(a.end(), {"--mca", "rmaps_rank_file_physical", "1", "--rankfile", s.rankfile, "--report-bindings"});
    } else {
      a.insert(a.end(), {"--bind-to", "none"});
    }
    a.insert(a.end(), {"-x", "CUDA_VISIBLE_DEVICES", "-x", "OMP_NUM_THREADS", s.train_bin, "--job", s.job_file,
                       "--out", s.results_dir});
    if (s.resume) a.push_back("--resume");
    if (!s.heartbeat_file.empty()) a.insert(a.end(), {"--heartbeat", s.heartbeat_file});
    if (s.owner_pid > 0) a.insert(a.end(), {"--owner-pid", std::to_string(s.owner_pid)});
    if (s.gpu_memory_fraction > 0) {
      std::ostringstream f;
      f << s.gpu_memory_fraction;
      a.insert(a.end(), {"--gpu-memory-fraction", f.str()});
    }
    return a;
  }

  std::unique_ptr<RunningJob> launch(const LaunchSpec& s) override {
    if (!s.core_ids.empty()) write_rankfile(s);
    const std::vector<std::string> argv_s = command(s);
    std::vector<char*> argv;
    for (const auto& x : argv_s) argv.push_back(const_cast<char*>(x.c_str()));
    argv.push_back(nullptr);

    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || kv.rfind("OMP_NUM_THREADS=", 0) == 0) continue;
      env_s.push_back(kv);
    }
    // cpu jobs see no GPU at all; gpu jobs see exactly their own.
    env_s.push_back("CUDA_VISIBLE_DEVICES=" + s.gpus);
    env_s.push_back("OMP_NUM_THREADS=" + std::to_string(s.req.threads_per_rank));
    std::vector<char*> envp;
    for (const auto& x : env_s) envp.push_back(const_cast<char*>(x.c_str()));
    envp.push_back(nullptr);

    SpawnFiles files;
    posix_spawn_file_actions_addopen(&files.f, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files.f, 1, s.log_out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&files.f, 2, s.log_err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    SpawnAttr attr;
    // Own process group: a terminal Ctrl-C reaches gridrun only, which then stops jobs in order.
    // Default signal handling and an empty mask: gridrun blocks signals for its signalfd.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2, SIGQUIT})
      sigaddset(&defaults, sig);
    posix_spawnattr_setflags(&attr.a, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr.a, 0);
    posix_spawnattr_setsigmask(&attr.a, &none);
    posix_spawnattr_setsigdefault(&attr.a, &defaults);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &files.f, &attr.a, argv.data(), envp.data());
    if (rc != 0)
      throw std::runtime_error("job " + s.job_id + ": cannot start mpirun: " + std::strerror(rc));
    return std::make_unique<Process>(pid);
  }

 private:
  static void write_rankfile(const LaunchSpec& s) {
    // rank i gets threads_per_rank consecutive entries of the job's core list.
    std::ostringstream os;
    const int t = s.req.threads_per_rank;
    for (int r = 0; r < s.req.ranks; ++r) {
      os << "rank " << r << "=" << s.host << " slot=";
      for (int k = 0; k < t; ++k) os << (k ? "," : "") << s.core_ids.at(static_cast<std::size_t>(r * t + k));
      os << "\n";
    }
    const std::string tmp = s.rankfile + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << os.str();
      if (!out) throw std::runtime_error(s.rankfile + ": cannot write rankfile");
    }
    if (std::rename(tmp.c_str(), s.rankfile.c_str()) != 0)
      throw std::runtime_error(s.rankfile + ": cannot write rankfile: " + std::strerror(errno));
  }
};

}  // namespace

std::unique_ptr<Executor> make_executor(const std::string& name) {
  if (name == "local") return std::make_unique<LocalExecutor>();
  throw std::invalid_argument("unknown executor '" + name + "' (local; Slurm runs through `gridrun submit`)");
}

std::vector<int> processes_with_arg(const std::string& needle) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  const int self = ::getpid();
  while (dirent* e = readdir(d)) {
    const int p = std::atoi(e->d_name);
    if (p <= 0 || p == self) continue;
    std::string cmd = read_file("/proc/" + std::string(e->d_name) + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) out.push_back(p);
  }
  closedir(d);
  return out;
}

int terminate_processes(const std::vector<int>& pids, double grace_s) {
  for (int p : pids)
    if (comm_of(p) != "mpirun") ::kill(p, SIGTERM);
  // These are not our children (their parent died), so waitpid cannot be used: pidfd_open + poll
  // waits for each to exit without polling loops.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (int p : pids) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, p, 0));
    if (fd < 0) continue;  // already gone
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLIN, 0};
    if (left.count() > 0) ::poll(&pfd, 1, static_cast<int>(left.count()));
    ::close(fd);
  }
  for (int p : pids) ::kill(p, SIGKILL);  // whatever is left (ESRCH for the ones that exited)
  return static_cast<int>(pids.size());
}

}  // namespace gridrun::scheduler
