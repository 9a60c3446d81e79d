// Roofline data for the HTML report: each job as a point (arithmetic intensity, achieved FLOP/s)
// under the compute and memory roofs of the hardware it ran on.
//
// Conventions (docs/report.md): FLOPs count a multiply-add as 2; training FLOPs per sample are 3x
// the analytic forward FLOPs; achieved FLOP/s = /summary/flops_per_s (written by the runner), else
// train_flops_per_sample (or 3 x flops_per_sample) x samples_per_s (inference: 1x forward).
// Intensity = flops_per_sample / bytes_per_sample (both forward, so the 3x cancels). Points are
// per GPU for GPU jobs (the job's FLOP/s divided by its GPUs) and per job for CPU jobs, whose roof
// scales with the cores the job used. GPU roofs come from a built-in table of dense peaks
// (hw/peaks.hpp) or --peak-tflops; CPU roofs from `gridrun probe` (hw/peak_probe.hpp).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/hw/peaks.hpp"
#include "gridrun/results/reader.hpp"

namespace gridrun::report {

struct RooflinePoint {
  std::string id, label;
  double intensity = 0;                                          // FLOP/byte
  double flops_per_s = 0;                                        // per GPU (GPU jobs) or per job (CPU jobs)
  double peak_flops = std::numeric_limits<double>::quiet_NaN();  // the job's own compute roof
  std::string roof;  // label of the roof it is compared with ("" if none)
};

struct Roofline {
  std::vector<hw::Roof> roofs;
  std::vector<RooflinePoint> points;
  std::vector<std::string> notes;  // why points or roofs are missing, where peaks came from
};

// Achieved FLOP/s of a whole job per the conventions above (NaN if the figures are missing).
double achieved_flops(const results::JobData& job);

// `labels[k]` names jobs[k] in the chart legend.
Roofline build_roofline(const std::vector<const results::JobData*>& jobs,
                        const std::vector<std::string>& labels, const hw::RoofOptions& opts);

}  // namespace gridrun::report
