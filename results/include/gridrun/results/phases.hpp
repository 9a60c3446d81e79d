// Phases of a compare-by run ("one large vs several small"): typed facts in, figures out.
//
// Why here: the figures of a phase (aggregate throughput, mean utilization) are derived from its
// jobs' result files, which the results library owns. The scheduler knows only facts (which jobs
// ran, how long the phase took, the resource-seconds it held); it passes them as PhaseFacts and
// stores the Phase it gets back (phase_to_json: the keys read_phases reads), so the figures are
// computed and named in one place instead of being rebuilt from JSON strings on both sides.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gridrun/base/json.hpp"

namespace gridrun::results {

struct JobData;

// One phase as state.json records it and the report shows it.
struct Phase {
  std::string name;
  double makespan_s = std::nan(""), samples_per_s = std::nan(""), util_mean = std::nan("");
  double alloc_util = std::nan(""), samples = std::nan("");
  // From the phase's first job start until its last job reached target_accuracy (NaN unless all
  // did): what "which arrangement answers sooner" asks. Derived by the report from the job files.
  double time_to_target_s = std::nan("");
  std::vector<std::string> jobs;
};

struct PhaseJob {
  std::string id;
  bool gpu = false;  // its utilization is the GPUs' (gpu_util_pct_mean), else the CPU's
};

// What the scheduler knows about one phase.
struct PhaseFacts {
  std::string name;            // the compare-by value
  double makespan_s = 0;       // from the phase's start to its last job's end
  double busy_resource_s = 0;  // allocated resource-seconds (GPUs on a GPU cluster, else cores)
  double capacity = 0;         // GPUs (GPU cluster) or cores of the cluster
  std::vector<PhaseJob> jobs;
};

// Figures of a phase from its facts and the finished result files `<results_dir>/<id>.h5`
// (jobs without one, e.g. failed, count for the makespan only): samples = sum of the jobs'
// `samples`, samples_per_s = samples / makespan, alloc_util = busy / (capacity x makespan),
// util_mean = mean of the jobs' utilization means (0-1), else alloc_util.
Phase phase_figures(const PhaseFacts& facts, const std::string& results_dir);

// The JSON object stored under state.json "phases".<name> (what read_phases reads back).
base::Json phase_to_json(const Phase& p);

// One phase object as phase_to_json wrote it (missing figures are NaN, never an exception).
Phase phase_from_json(const std::string& name, const base::Json& v);

// "phases" of RUN_DIR/state.json; empty if the file or the key is absent. Throws on bad JSON.
std::vector<Phase> read_phases(const std::string& state_json);

// Phases of a run from its job files: Slurm runs (`gridrun submit` chains the phases, but no
// scheduler of ours saw them run, so state.json has none) get their phases from the files'
// `meta.phase`, start_time and end_time (whole seconds) and /summary. Every phase, recorded or
// derived, gets its time_to_target_s. `files` are the job files' paths, unreadable ones skipped.
std::vector<Phase> complete_phases(std::vector<Phase> recorded, const std::vector<const JobData*>& jobs);

}  // namespace gridrun::results
