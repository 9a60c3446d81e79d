// Process facts for the results file (see system_info.hpp).
#include "system_info.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace gridrun::runner {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

namespace {
// A "Name:   123 kB" line of /proc/self/status, in bytes; -1 when absent.
std::int64_t status_kb(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(name) + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size()) * 1024;
  return -1;
}
}  // namespace

void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::int64_t current_rss_bytes() { return std::max<std::int64_t>(status_kb("VmRSS"), 0); }

std::int64_t peak_rss_bytes() {
  if (const std::int64_t hwm = status_kb("VmHWM"); hwm >= 0) return hwm;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::int64_t>(ru.ru_maxrss) * 1024;
}

std::string torch_version() { return TORCH_VERSION; }

std::string gridrun_version() {
  return std::string(GRIDRUN_VERSION) + " (commit " + GRIDRUN_GIT_COMMIT + ")";
}

}  // namespace gridrun::runner
