// The compute and memory roofs of a device: a built-in table of GPU peaks, --peak-tflops, or the
// CPU figures of `gridrun probe` (peak_probe.hpp).
//
// Why in hw/: the runner's MFU in /summary and the report's roofline must divide by the same peak,
// and neither may depend on the other; the peak of a device is a hardware fact.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/base/device.hpp"
#include "gridrun/base/job_kinds.hpp"
#include "gridrun/hw/peak_probe.hpp"

namespace gridrun::hw {

// Dense (no sparsity) vendor peaks per device.
struct GpuPeak {
  std::string name;  // matched case-insensitively as a substring of the device name
  double bf16_tflops, fp16_tflops, fp32_tflops;  // fp32: non-tensor-core
  double mem_tbs;                                // HBM bandwidth, TB/s
  double tf32_tflops = 0;  // TF32 tensor cores (fp32 jobs with tf32: true); 0 = none, fp32 rate
};
const std::vector<GpuPeak>& known_gpus();
// The first entry whose name occurs in `device_name` (more specific names are listed first, e.g.
// "H100 PCIe" before "H100"), or nullptr.
const GpuPeak* find_gpu_peak(const std::string& device_name);

struct Roof {
  std::string label;
  double peak_flops = 0;  // FLOP/s
  double bandwidth = 0;   // bytes/s (0: unknown, compute roof only)
};

struct RoofOptions {
  double peak_tflops = std::numeric_limits<double>::quiet_NaN();  // overrides every compute peak
  std::optional<ProbeResult> probe;                               // CPU roofs
  std::string probe_source;                                       // where the probe came from (for the notes)
};

// The arithmetic a job's math ran at, which picks a GPU's peak: the job's precision, or tf32 for an
// fp32 job whose convolutions and matmuls ran on TF32 tensor cores (its `tf32: true`).
enum class MathMode { fp32, tf32, bf16, fp16 };
constexpr const char* math_mode_name(MathMode m) {
  switch (m) {
    case MathMode::tf32: return "tf32";
    case MathMode::bf16: return "bf16";
    case MathMode::fp16: return "fp16";
    case MathMode::fp32: break;
  }
  return "fp32";
}

// What a job ran on, for choosing its compute roof.
struct RoofQuery {
  base::Device device = base::Device::cpu;
  std::string gpu_name;  // first device's name (gpu jobs), as NVML reports it
  MathMode precision = MathMode::fp32;
  double ranks = 1, threads_per_rank = 1;
};
// What a job was, as the roof needs it: plain fields, because jobs/ (JobParams) sits beside hw/ on
// floor 1. The runner fills it from its JobParams, the report from a results file's parameters.
struct JobRoofFacts {
  base::Device device = base::Device::cpu;
  bool inference = false;  // task: inference
  base::Precision precision = base::Precision::fp32;
  bool tf32 = false;  // the job's `tf32` parameter
  double ranks = 1, threads_per_rank = 1;
  std::string gpu_names;  // the devices' names, comma-separated (`gpu_names`): the first counts
};
// The one rule from a job to its roof query, shared by the runner's MFU and the report's roofline
// (issue 46: each built its own): the precision the job's math ran at. Training: its `precision`,
// and "tf32" for fp32 on a GPU with `tf32: true` (the runner applies the TF32 policy to training).
// Inference: always "fp32": it runs the fp32 model forward without autocast (jobs::check refuses
// another precision) and the runner does not apply the TF32 policy to it, so its matmuls run in full
// fp32 whatever `tf32` says. ranks is at least 1.
RoofQuery roof_query(const JobRoofFacts& job);

// The roof of ONE device (gpu) or of the cores the job used (cpu): --peak-tflops, else the
// built-in GPU table, else the probe. label is empty when no peak is known. Shared by the report's
// roofline and the runner's MFU in /summary, so both divide by the same peak.
Roof roof_for(const RoofQuery& q, const RoofOptions& opts);

}  // namespace gridrun::hw
