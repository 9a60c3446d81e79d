// CUDA_VISIBLE_DEVICES, parsed in one place (issue 46): the scheduler's discovery of this machine's
// GPUs (which device names a job may be given) and the utilization sampler (which NVML devices a
// job's ranks see) read it through these functions, so they cannot disagree on what it lists.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridrun::hw {

// The entries of a CUDA_VISIBLE_DEVICES value, in order: comma-separated, blanks around an entry
// dropped, empty entries skipped, and the list ends before "-1" (CUDA stops at the first entry it
// cannot resolve, and "-1" is the conventional "no more devices"). An entry is a device index
// ("0"; NVML enumerates in PCI bus order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID) or a UUID
// prefix ("GPU-8f3a...", "MIG-..."); which of them resolve is the caller's to decide.
std::vector<std::string> parse_visible_devices(std::string_view value);

// The environment's CUDA_VISIBLE_DEVICES through parse_visible_devices; nullopt when it is unset
// (every device is visible; set but empty, none is).
std::optional<std::vector<std::string>> visible_devices_from_env();

}  // namespace gridrun::hw
