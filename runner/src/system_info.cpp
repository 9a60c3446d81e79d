// Process facts for the results file (see system_info.hpp).
#include "gridrun/runner/system_info.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <torch/version.h>

namespace gridrun::runner {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

std::int64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::int64_t>(ru.ru_maxrss) * 1024;
}

std::string torch_version() { return TORCH_VERSION; }

std::string gridrun_version() {
  return std::string(GRIDRUN_VERSION) + " (commit " + GRIDRUN_GIT_COMMIT + ")";
}

}  // namespace gridrun::runner
