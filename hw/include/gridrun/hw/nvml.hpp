// NVML (the NVIDIA management library) bound at run time: the one loader of gridrun (issue 46),
// used by the utilization sampler (util_sampler.hpp: per-GPU figures and the conditions a job ran
// under, gpu_conditions.hpp) and by the scheduler's discovery of this machine's GPUs.
//
// Why dlopen: `gridrun` and `gridrun-train` must build and run on machines without a GPU driver;
// libnvidia-ml.so.1 is looked up when asked for, and when it is missing (or fails to initialise)
// `Nvml::error()` says why and the callers do without it. NVML's C types are declared here, so no
// NVIDIA header is needed either.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gridrun::hw {

namespace nvml {

inline constexpr const char* kLibrary = "libnvidia-ml.so.1";

using Return = int;  // nvmlReturn_t: 0 is success
using Device = struct nvmlDevice_st*;
struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
// nvmlProcessInfo_t of nvmlDeviceGetComputeRunningProcesses_v2/_v3 (v1 has pid and memory only).
struct ProcessInfoV2 {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};
struct ProcessInfoV1 {
  unsigned pid;
  unsigned long long usedGpuMemory;
};
// One compute process on a device, as the process-list entry points give it.
struct GpuProcess {
  unsigned pid = 0;
  unsigned long long used_bytes = 0;  // its device memory; 0 where NVML cannot say (N/A)
};
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kClockSm = 1;
inline constexpr Return kErrorInsufficientSize = 7;

}  // namespace nvml

// The library, opened and initialised by the constructor, shut down and closed by the destructor
// (RAII; not copyable). When ok(), `count` is bound; every other entry point is null where the
// library lacks it (older drivers), so a caller checks the ones it uses.
class Nvml {
 public:
  // dlopen(path), the entry points, nvmlInit_v2. Never throws: a failure is error().
  explicit Nvml(const std::string& path = nvml::kLibrary);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool ok() const { return error_.empty(); }
  // Why NVML cannot be used ("" when ok()): "NVML not available (PATH not loadable)", "NVML library
  // lacks required symbols" or "nvmlInit failed (code N)".
  const std::string& error() const { return error_; }

  // nvmlDeviceGetCount_v2: the devices of the machine (not only the visible ones); nullopt when
  // not ok() or NVML cannot say.
  std::optional<unsigned> device_count() const;
  // The compute processes on `d` (PID and device memory) appended to `out`; false when NVML
  // cannot say.
  bool processes(nvml::Device d, std::vector<nvml::GpuProcess>& out) const;

  nvml::Return (*count)(unsigned*) = nullptr;
  nvml::Return (*by_index)(unsigned, nvml::Device*) = nullptr;
  nvml::Return (*by_uuid)(const char*, nvml::Device*) = nullptr;
  nvml::Return (*uuid)(nvml::Device, char*, unsigned) = nullptr;
  nvml::Return (*name)(nvml::Device, char*, unsigned) = nullptr;
  nvml::Return (*util)(nvml::Device, nvml::Utilization*) = nullptr;
  nvml::Return (*memory)(nvml::Device, nvml::Memory*) = nullptr;
  nvml::Return (*power)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*energy)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*temperature)(nvml::Device, int, unsigned*) = nullptr;
  nvml::Return (*clock)(nvml::Device, int, unsigned*) = nullptr;
  nvml::Return (*max_clock)(nvml::Device, int, unsigned*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons (NVML 12.2+), else ...ThrottleReasons: same bits.
  nvml::Return (*reasons)(nvml::Device, unsigned long long*) = nullptr;
  // nvmlDeviceGetComputeRunningProcesses_v3 or _v2 (procs_v2), else the v1 entry point (procs_v1).
  nvml::Return (*procs_v2)(nvml::Device, unsigned*, nvml::ProcessInfoV2*) = nullptr;
  nvml::Return (*procs_v1)(nvml::Device, unsigned*, nvml::ProcessInfoV1*) = nullptr;

 private:
  void bind_all();
  void* lib_ = nullptr;
  bool initialized_ = false;
  nvml::Return (*init_)() = nullptr;
  nvml::Return (*shutdown_)() = nullptr;
  std::string error_;
};

}  // namespace gridrun::hw
