// See host.hpp. Everything is read from /proc so that no helper process is started.
#include "gridrun/base/host.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::base {

std::string hostname(const std::string& fallback) {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return fallback;
  return buf;
}

std::string self_exe() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

double process_start_unix() {
  // Boot time is taken from CLOCK_BOOTTIME, not /proc/stat's btime (whole seconds), so the result
  // is good to a clock tick.
  const auto ticks = start_ticks(static_cast<int>(::getpid()));
  const long hz = ::sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (!ticks || *ticks == 0 || hz <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return std::nan("");
  const double since_boot = static_cast<double>(boot.tv_sec) + 1e-9 * static_cast<double>(boot.tv_nsec);
  return unix_now() - (since_boot - static_cast<double>(*ticks) / static_cast<double>(hz));
}

std::string cpu_model() {
  const auto info = try_read_file("/proc/cpuinfo", kinds::kProcFile);
  if (!info) return "unknown";
  std::istringstream in(*info);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trim(std::string_view(line).substr(colon + 1));
    }
  }
  return "unknown";
}

std::vector<int> children_of(int pid) {
  std::vector<int> out;
  const std::string p = std::to_string(pid);
  std::istringstream is(
      try_read_file("/proc/" + p + "/task/" + p + "/children", kinds::kProcFile).value_or(""));
  int c;
  while (is >> c) out.push_back(c);
  if (!out.empty()) return out;
  // Kernels without CONFIG_PROC_CHILDREN have no children file: scan /proc for the parent id.
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/proc"), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    const int q = std::atoi(e->d_name);
    if (q <= 0) continue;
    const std::string stat =
        try_read_file("/proc/" + std::string(e->d_name) + "/stat", kinds::kProcFile).value_or("");
    const auto rp = stat.rfind(')');
    if (rp == std::string::npos || rp + 2 >= stat.size()) continue;
    std::istringstream ss(stat.substr(rp + 2));
    char state;
    int ppid = 0;
    ss >> state >> ppid;
    if (ppid == pid) out.push_back(q);
  }
  return out;
}

std::string comm_of(int pid) {
  std::string c = try_read_file("/proc/" + std::to_string(pid) + "/comm", kinds::kProcFile).value_or("");
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
  return c;
}

namespace {

// The fields of /proc/PID/stat after the command name, which may itself hold spaces and ')':
// fields[0] is field 3 (state). Empty when the process is gone.
std::vector<std::string> stat_fields(int pid) {
  std::vector<std::string> out;
  const auto stat = try_read_file("/proc/" + std::to_string(pid) + "/stat", kinds::kProcFile);
  if (!stat) return out;
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(stat->substr(close + 1));
  for (std::string f; fields >> f;) out.push_back(f);
  return out;
}

// Real and effective uid of a process (/proc/PID/status "Uid:"), nullopt when it is gone.
std::optional<std::pair<long, long>> uids_of(const std::string& pid) {
  const auto status = try_read_file("/proc/" + pid + "/status", kinds::kProcFile);
  if (!status) return std::nullopt;
  const auto at = status->find("\nUid:");
  if (at == std::string::npos) return std::nullopt;
  std::istringstream is(status->substr(at + 5));
  long real = -1, effective = -1;
  if (!(is >> real >> effective)) return std::nullopt;
  return std::make_pair(real, effective);
}

}  // namespace

int parent_of(int pid) {
  const auto f = stat_fields(pid);
  if (f.size() < 2) return -1;  // field 4 is f[1]
  char* end = nullptr;
  const long ppid = std::strtol(f[1].c_str(), &end, 10);
  return end == f[1].c_str() || *end ? -1 : static_cast<int>(ppid);
}

std::optional<unsigned long long> start_ticks(int pid) {
  const auto f = stat_fields(pid);
  if (f.size() < 20) return std::nullopt;  // field 22 is f[19]
  char* end = nullptr;
  const unsigned long long ticks = std::strtoull(f[19].c_str(), &end, 10);
  if (end == f[19].c_str() || *end) return std::nullopt;
  return ticks;
}

std::optional<PinnedProcess> PinnedProcess::open(int pid) {
  if (pid <= 0) return std::nullopt;
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return std::nullopt;  // gone (pidfd_open's fd is close-on-exec)
  return PinnedProcess(pid, fd);
}

PinnedProcess& PinnedProcess::operator=(PinnedProcess&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    pid_ = o.pid_;
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

PinnedProcess::~PinnedProcess() {
  if (fd_ >= 0) ::close(fd_);
}

bool PinnedProcess::exited() const { return wait_exit(0); }

bool PinnedProcess::wait_exit(double timeout_s) const {
  // A pidfd polls readable once its process has ended.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30)));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool PinnedProcess::signal(int sig) const {
  return ::syscall(SYS_pidfd_send_signal, fd_, sig, nullptr, 0) == 0;
}

std::vector<PinnedProcess> own_processes_with_env(const std::vector<std::string>& entries) {
  std::vector<PinnedProcess> out;
  if (entries.empty()) return out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/proc"), closedir);
  if (!d) return out;
  const int self = ::getpid();
  const long me = static_cast<long>(::geteuid());
  while (dirent* e = readdir(d.get())) {
    const int p = std::atoi(e->d_name);
    if (p <= 0 || p == self) continue;
    // Pinned first: what is read below is then this process's, if it is still alive after.
    auto pinned = PinnedProcess::open(p);
    if (!pinned) continue;
    // Another user's process is never ours, whatever its environment says (as root too).
    const auto uids = uids_of(e->d_name);
    if (!uids || uids->first != me || uids->second != me) continue;
    const std::string env =
        try_read_file("/proc/" + std::string(e->d_name) + "/environ", kinds::kProcFile).value_or("");
    std::size_t found = 0;
    for (const auto& want : entries) {
      // A whole NUL-terminated entry, not a part of one.
      for (std::size_t at = env.find(want); at != std::string::npos; at = env.find(want, at + 1)) {
        const bool starts = at == 0 || env[at - 1] == '\0';
        const bool ends = at + want.size() == env.size() || env[at + want.size()] == '\0';
        if (starts && ends) {
          ++found;
          break;
        }
      }
    }
    // Still alive after the reads: the uid and environment read were this pinned process's.
    if (found == entries.size() && !pinned->exited()) out.push_back(std::move(*pinned));
  }
  return out;
}

bool holds_flock(int pid, const std::string& path) {
  struct stat want {};
  if (::stat(path.c_str(), &want) != 0) return false;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir((proc + "/fd").c_str()), closedir);
  if (!d) return false;
  while (dirent* e = readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    struct stat st {};
    // stat follows the fd's link to the open file itself, whatever its path now.
    if (::stat((proc + "/fd/" + e->d_name).c_str(), &st) != 0) continue;
    if (st.st_dev != want.st_dev || st.st_ino != want.st_ino) continue;
    // "lock:\t1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF": the locks held through this fd.
    std::istringstream info(try_read_file(proc + "/fdinfo/" + e->d_name, kinds::kProcFile).value_or(""));
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("lock:", 0) != 0) continue;
      std::istringstream words(line.substr(5));
      std::string n, kind, mode, access;
      words >> n >> kind >> mode >> access;
      if (kind == "FLOCK" && access == "WRITE") return true;
    }
  }
  return false;
}

bool node_cpu_ticks(double& busy, double& total) {
  char buf[512];
  FILE* f = std::fopen("/proc/stat", "re");
  if (!f) return false;
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  if (n == 0 || std::strncmp(buf, "cpu ", 4) != 0) return false;
  const char* p = buf + 4;
  double v[8] = {0};
  for (double& x : v) {
    char* end = nullptr;
    x = std::strtod(p, &end);
    p = end;
  }
  total = 0;
  for (double x : v) total += x;  // user nice system idle iowait irq softirq steal
  busy = total - v[3] - v[4];
  return true;
}

namespace {

// CPU clock ticks (user + system, with their waited-for children's) of the live descendants of
// this process: a warm worker or a rank not reaped yet has spent CPU that getrusage cannot see
// until it is waited for, and without this it counted as another process's load.
double live_descendant_ticks() {
  double ticks = 0;
  std::vector<int> todo = children_of(static_cast<int>(::getpid()));
  std::set<int> seen;
  while (!todo.empty()) {
    const int pid = todo.back();
    todo.pop_back();
    if (!seen.insert(pid).second) continue;
    const auto f = stat_fields(pid);
    if (f.size() < 15) continue;  // gone; fields 14-17 are f[11]..f[14]
    for (std::size_t k = 11; k <= 14; ++k) ticks += std::strtod(f[k].c_str(), nullptr);
    for (int c : children_of(pid)) todo.push_back(c);
  }
  return ticks;
}

}  // namespace

CpuSnapshot cpu_snapshot() {
  CpuSnapshot s;
  double busy = 0, total = 0;
  const long hz = ::sysconf(_SC_CLK_TCK);
  rusage self{}, kids{};
  if (hz <= 0 || !node_cpu_ticks(busy, total) || ::getrusage(RUSAGE_SELF, &self) != 0 ||
      ::getrusage(RUSAGE_CHILDREN, &kids) != 0)
    return s;
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  s.node_busy_s = busy / static_cast<double>(hz);
  s.own_s = secs(self.ru_utime) + secs(self.ru_stime) + secs(kids.ru_utime) + secs(kids.ru_stime) +
            live_descendant_ticks() / static_cast<double>(hz);
  s.cores = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  s.ok = true;
  return s;
}

double outside_cpu_share(const CpuSnapshot& from, const CpuSnapshot& to, double wall_s) {
  if (!from.ok || !to.ok || !(wall_s > 0) || to.cores <= 0) return std::nan("");
  const double outside = (to.node_busy_s - from.node_busy_s) - (to.own_s - from.own_s);
  return std::clamp(outside / (wall_s * to.cores), 0.0, 1.0);
}

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  for (std::size_t got = 0; got < raw.size();) {
    const ssize_t n = ::getrandom(raw.data() + got, raw.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("getrandom: ") + errno_text(errno));
    got += static_cast<std::size_t>(n);
  }
  static const char hex[] = "0123456789abcdef";
  std::string t;
  t.reserve(2 * bytes);
  for (unsigned char b : raw) {
    t += hex[b >> 4];
    t += hex[b & 15];
  }
  return t;
}

}  // namespace gridrun::base
