// Facts about the process recorded in every results file (no LibTorch, no MPI here). Host facts
// (CPU model, host name) are gridrun::base's (base/host.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace gridrun::runner {

int usable_cores();  // CPUs in this process's affinity mask
// Peak resident memory since the process started or since the last reset_peak_rss() (VmHWM; a
// warm worker resets it per job, so each job records its own peak), else getrusage's ru_maxrss.
std::int64_t peak_rss_bytes();
void reset_peak_rss();             // /proc/self/clear_refs "5" (Linux 4.0+); no-op where refused
std::int64_t current_rss_bytes();  // VmRSS now (0 when /proc cannot be read)
std::string torch_version();       // LibTorch version the binary was built against
std::string gridrun_version();     // "0.1.0 (commit abc123)"

}  // namespace gridrun::runner
