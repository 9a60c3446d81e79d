// Facts about the process recorded in every results file (no LibTorch, no MPI here). Host facts
// (CPU model, host name) are gridrun::base's (base/host.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace gridrun::runner {

int usable_cores();             // CPUs in this process's affinity mask
std::int64_t peak_rss_bytes();  // getrusage ru_maxrss
std::string torch_version();    // LibTorch version the binary was built against
std::string gridrun_version();  // "0.1.0 (commit abc123)"

}  // namespace gridrun::runner
