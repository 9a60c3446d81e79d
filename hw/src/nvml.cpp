// The one NVML loader (see nvml.hpp): dlopen, dlsym, nvmlInit_v2; nvmlShutdown and dlclose at the end.
#include "gridrun/hw/nvml.hpp"

#include <dlfcn.h>

namespace gridrun::hw {

namespace {

template <class F>
bool bind(void* lib, F& fn, const char* sym) {
  fn = reinterpret_cast<F>(dlsym(lib, sym));
  return fn != nullptr;
}

// The compute processes on `d` through one of the entry points' versions.
template <class Info>
bool list(nvml::Return (*fn)(nvml::Device, unsigned*, Info*), nvml::Device d,
          std::vector<nvml::GpuProcess>& out) {
  // NVML_VALUE_NOT_AVAILABLE: the memory of a process NVML cannot measure (some vGPU set-ups).
  constexpr unsigned long long kNotAvailable = ~0ULL;
  std::vector<Info> infos(16);
  for (int tries = 0; tries < 3; ++tries) {  // processes may start between the two calls
    unsigned n = static_cast<unsigned>(infos.size());
    const nvml::Return r = fn(d, &n, infos.data());
    if (r == nvml::kErrorInsufficientSize) {
      infos.resize(n + 8);
      continue;
    }
    if (r != 0) return false;
    for (unsigned k = 0; k < n && k < infos.size(); ++k)
      out.push_back({infos[k].pid, infos[k].usedGpuMemory == kNotAvailable ? 0 : infos[k].usedGpuMemory});
    return true;
  }
  return false;
}

}  // namespace

Nvml::Nvml(const std::string& path) {
  lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    error_ = "NVML not available (" + path + " not loadable)";
    return;
  }
  if (!bind(lib_, init_, "nvmlInit_v2") || !bind(lib_, shutdown_, "nvmlShutdown") ||
      !bind(lib_, count, "nvmlDeviceGetCount_v2")) {
    error_ = "NVML library lacks required symbols";
    return;
  }
  bind_all();
  if (const nvml::Return r = init_(); r != 0) {
    error_ = "nvmlInit failed (code " + std::to_string(r) + ")";
    return;
  }
  initialized_ = true;
}

void Nvml::bind_all() {
  bind(lib_, by_index, "nvmlDeviceGetHandleByIndex_v2");
  bind(lib_, by_uuid, "nvmlDeviceGetHandleByUUID");
  bind(lib_, uuid, "nvmlDeviceGetUUID");
  bind(lib_, name, "nvmlDeviceGetName");
  bind(lib_, util, "nvmlDeviceGetUtilizationRates");
  bind(lib_, memory, "nvmlDeviceGetMemoryInfo");
  bind(lib_, power, "nvmlDeviceGetPowerUsage");
  bind(lib_, energy, "nvmlDeviceGetTotalEnergyConsumption");
  bind(lib_, temperature, "nvmlDeviceGetTemperature");
  bind(lib_, clock, "nvmlDeviceGetClockInfo");
  bind(lib_, max_clock, "nvmlDeviceGetMaxClockInfo");
  if (!bind(lib_, reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
    bind(lib_, reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!bind(lib_, procs_v2, "nvmlDeviceGetComputeRunningProcesses_v3") &&
      !bind(lib_, procs_v2, "nvmlDeviceGetComputeRunningProcesses_v2"))
    bind(lib_, procs_v1, "nvmlDeviceGetComputeRunningProcesses");
}

Nvml::~Nvml() {
  if (initialized_ && shutdown_) shutdown_();
  if (lib_) dlclose(lib_);
}

std::optional<unsigned> Nvml::device_count() const {
  unsigned n = 0;
  if (!ok() || count(&n) != 0) return std::nullopt;
  return n;
}

bool Nvml::processes(nvml::Device d, std::vector<nvml::GpuProcess>& out) const {
  if (procs_v2) return list(procs_v2, d, out);
  if (procs_v1) return list(procs_v1, d, out);
  return false;
}

}  // namespace gridrun::hw
