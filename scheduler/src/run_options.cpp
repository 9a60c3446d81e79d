// default_train_bin (see run_options.hpp).
#include "gridrun/scheduler/run_options.hpp"

#include <unistd.h>

#include <filesystem>

#include "gridrun/base/host.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {
std::string sibling_bin(const char* name) {
  const std::string self = base::self_exe();
  if (!self.empty()) {
    const fs::path cand = fs::path(self).parent_path() / name;
    if (::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return name;
}
}  // namespace

std::string default_train_bin() { return sibling_bin("gridrun-train"); }

std::string default_exec_bin() { return sibling_bin("gridrun-exec"); }

SimOptions sim_options_of(const RunOptions& o) {
  SimOptions so;
  so.policy = o.policy;
  so.max_parallel = o.max_parallel;
  so.warm = o.launch == run::Launch::Warm;
  so.worker_idle_s = o.worker_idle_s;
  return so;
}

}  // namespace gridrun::scheduler
