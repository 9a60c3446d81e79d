// What the utilization sampler measures, on its own so that the results writer (which stores the
// samples as /util rows) does not pull in the sampler's thread and NVML machinery.
#pragma once

#include <vector>

namespace gridrun::hw {

// One sample of a job's processes and devices (a row of the results file's /util).
struct UtilSample {
  double time_s = 0;
  std::vector<double> rank_cpu_pct;    // size == ranks (NaN where unknown)
  std::vector<double> rank_rss_bytes;  // size == ranks
  double node_cpu_pct = 0;
  // size == gpus each (NaN where a counter is unsupported)
  std::vector<double> gpu_util_pct, gpu_mem_bytes, gpu_power_w, gpu_energy_j, gpu_temp_c, gpu_sm_mhz;
};

}  // namespace gridrun::hw
