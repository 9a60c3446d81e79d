// Roofline data for the HTML report: each job as a point (arithmetic intensity, achieved FLOP/s)
// under the compute and memory roofs of the hardware it ran on.
//
// Conventions (docs/report.md): FLOPs count a multiply-add as 2; training FLOPs per sample are 3x
// the analytic forward FLOPs; achieved FLOP/s = /summary/flops_per_s (written by the runner), else
// train_flops_per_sample (or 3 x flops_per_sample) x samples_per_s (inference: 1x forward).
// Intensity = flops_per_sample / bytes_per_sample (both forward, so the 3x cancels). Points are
// per GPU for GPU jobs (the job's FLOP/s divided by its GPUs) and per job for CPU jobs, whose roof
// scales with the cores the job used. GPU roofs come from a built-in table of dense peaks
// (known_gpus) or --peak-tflops; CPU roofs from `gridrun probe` (probe.hpp).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/results/probe.hpp"
#include "gridrun/results/reader.hpp"

namespace gridrun::results {

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

struct RooflinePoint {
  std::string id, label;
  double intensity = 0;                                          // FLOP/byte
  double flops_per_s = 0;                                        // per GPU (GPU jobs) or per job (CPU jobs)
  double peak_flops = std::numeric_limits<double>::quiet_NaN();  // the job's own compute roof
  std::string roof;  // label of the roof it is compared with ("" if none)
};

struct Roofline {
  std::vector<Roof> roofs;
  std::vector<RooflinePoint> points;
  std::vector<std::string> notes;  // why points or roofs are missing, where peaks came from
};

struct RooflineOptions {
  double peak_tflops = std::numeric_limits<double>::quiet_NaN();  // overrides every compute peak
  std::optional<ProbeResult> probe;                               // CPU roofs
  std::string probe_source;                                       // where the probe came from (for the notes)
};

// What a job ran on, for choosing its compute roof.
struct RoofQuery {
  std::string device = "cpu";  // cpu | gpu
  std::string gpu_name;        // first device's name (gpu jobs), as NVML reports it
  std::string precision = "fp32";
  double ranks = 1, threads_per_rank = 1;
};
// The roof of ONE device (gpu) or of the cores the job used (cpu): --peak-tflops, else the
// built-in GPU table, else the probe. label is empty when no peak is known. Shared by the report's
// roofline and the runner's MFU in /summary, so both divide by the same peak.
Roof roof_for(const RoofQuery& q, const RooflineOptions& opts);

// Achieved FLOP/s of a whole job per the conventions above (NaN if the figures are missing).
double achieved_flops(const JobData& job);

// `labels[k]` names jobs[k] in the chart legend.
Roofline build_roofline(const std::vector<const JobData*>& jobs, const std::vector<std::string>& labels,
                        const RooflineOptions& opts);

}  // namespace gridrun::results
