// The figures of a compare-by run's phases ("one large vs several small"): from the facts the
// scheduler recorded (run/state.hpp's PhaseRecord: jobs, makespan, allocated resource-seconds) and
// what the jobs' result files say they achieved.
//
// Why here, and only here: the scheduler knows which jobs ran and for how long, the result files
// know samples, utilization and time to target; the report is the one place that sees both, so the
// figures are computed and named once (local and Slurm runs alike).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gridrun/results/reader.hpp"
#include "gridrun/run/state.hpp"

namespace gridrun::report {

// One phase as the report shows it.
struct PhaseFigures {
  std::string name;
  double makespan_s = std::nan(""), samples_per_s = std::nan(""), util_mean = std::nan("");
  double alloc_util = std::nan(""), samples = std::nan("");
  // From the phase's first job start until its last job reached target_accuracy (NaN unless all
  // did): what "which arrangement answers sooner" asks.
  double time_to_target_s = std::nan("");
  // Recorded phases: every job the phase ran (failed ones too); derived phases: the readable files.
  std::vector<std::string> jobs;
};

// The phases of a run, in the order they ran (a recorded phase's start, else its first job's). A recorded phase (state.json
// of `gridrun run`) takes its makespan and allocation from the record: samples = sum of its jobs'
// `samples` (jobs without a readable file, e.g. failed, count for the makespan only),
// samples_per_s = samples / makespan, alloc_util = busy / (capacity x makespan), util_mean = mean of
// the jobs' utilization means (0-1), else alloc_util. Without records (Slurm runs: no scheduler of
// ours saw the phases run), phases come from the files' `meta.phase`, start and end times. Every
// phase gets its time_to_target_s. `jobs` are the readable job files.
std::vector<PhaseFigures> complete_phases(const std::map<std::string, run::PhaseRecord>& recorded,
                                          const std::vector<const results::JobData*>& jobs);

}  // namespace gridrun::report
