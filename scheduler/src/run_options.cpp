// default_train_bin (see run_options.hpp).
#include "gridrun/scheduler/run_options.hpp"

#include <unistd.h>

#include <filesystem>

#include "gridrun/base/host.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

std::string default_train_bin() {
  const std::string self = base::self_exe();
  if (!self.empty()) {
    const fs::path cand = fs::path(self).parent_path() / "gridrun-train";
    if (::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "gridrun-train";
}

}  // namespace gridrun::scheduler
