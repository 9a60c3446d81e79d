// See host.hpp. Everything is read from /proc so that no helper process is started.
#include "gridrun/base/host.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <sstream>

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
  const auto stat = try_read_file("/proc/self/stat");
  if (!stat) return std::nan("");
  // Field 22 (starttime, clock ticks since boot) counts from after the command name's ')', which
  // may itself hold spaces. Boot time is taken from CLOCK_BOOTTIME, not /proc/stat's btime (whole
  // seconds), so the result is good to a clock tick.
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nan("");
  std::istringstream fields(stat->substr(close + 1));
  std::string f;
  unsigned long long ticks = 0;
  for (int k = 3; k <= 22 && fields >> f; ++k)
    if (k == 22) ticks = std::strtoull(f.c_str(), nullptr, 10);
  const long hz = ::sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (ticks == 0 || hz <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return std::nan("");
  const double since_boot = static_cast<double>(boot.tv_sec) + 1e-9 * static_cast<double>(boot.tv_nsec);
  return unix_now() - (since_boot - static_cast<double>(ticks) / static_cast<double>(hz));
}

std::string cpu_model() {
  const auto info = try_read_file("/proc/cpuinfo");
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
  std::istringstream is(try_read_file("/proc/" + p + "/task/" + p + "/children").value_or(""));
  int c;
  while (is >> c) out.push_back(c);
  if (!out.empty()) return out;
  // Kernels without CONFIG_PROC_CHILDREN have no children file: scan /proc for the parent id.
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/proc"), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    const int q = std::atoi(e->d_name);
    if (q <= 0) continue;
    const std::string stat = try_read_file("/proc/" + std::string(e->d_name) + "/stat").value_or("");
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
  std::string c = try_read_file("/proc/" + std::to_string(pid) + "/comm").value_or("");
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
  return c;
}

std::vector<int> processes_with_arg(const std::unordered_set<std::string>& args) {
  std::vector<int> out;
  if (args.empty()) return out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir("/proc"), closedir);
  if (!d) return out;
  const int self = ::getpid();
  while (dirent* e = readdir(d.get())) {
    const int p = std::atoi(e->d_name);
    if (p <= 0 || p == self) continue;
    const std::string cmd = try_read_file("/proc/" + std::string(e->d_name) + "/cmdline").value_or("");
    // One argument at a time (NUL-separated): the argument itself, or what follows its first '='.
    for (std::size_t pos = 0; pos < cmd.size();) {
      std::size_t end = cmd.find('\0', pos);
      if (end == std::string::npos) end = cmd.size();
      const std::string arg = cmd.substr(pos, end - pos);
      const auto eq = arg.find('=');
      if (args.count(arg) || (eq != std::string::npos && args.count(arg.substr(eq + 1)))) {
        out.push_back(p);
        break;
      }
      pos = end + 1;
    }
  }
  return out;
}

}  // namespace gridrun::base
