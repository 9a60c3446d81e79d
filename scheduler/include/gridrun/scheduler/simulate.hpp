// Simulation: the schedule a grid would get on a cluster, without launching anything.
//
// Why: users plan a 1,000-GPU sweep before spending it, and the "one large vs several small jobs"
// question is answered first on paper. The simulator drives the same `Engine` as `gridrun run`
// with an event queue of job ends, so what it prints is what the real run would do when the
// duration estimates hold. Estimates come from previous results of the same job id when present,
// else from a small cost model (forward FLOPs per sample x samples x 3 / rate), documented in
// docs/scheduler.md.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/scheduler/placement.hpp"

namespace gridrun::scheduler {

// Seconds an idle warm worker waits for its next job before it exits: `gridrun run --worker-idle`'s
// default (RunOptions) and what `simulate` assumes (SimOptions).
inline constexpr double kWorkerIdleS = 10;

// Cost model. Rates are sustained training throughputs, not peaks.
struct CostModel {
  double cpu_gflops_per_core = 20.0;  // --cpu-rate
  double gpu_gflops = 8000.0;         // --gpu-rate, per GPU
  double startup_s = 3.0;             // mpirun + process start + data set load
  // model=torchscript: forward FLOPs per sample as gridrun-train counted them from the model
  // (`gridrun-train --count-flops`, run by ModelChecker when the grid is loaded, model_check.hpp), by
  // script_cost_key.
  std::map<std::string, double> script_flops;
};
// The key of script_flops: the model file's hash and what decides its input (the data set).
std::string script_cost_key(const jobs::JobParams& p);
// Analytic forward FLOPs per sample (multiply-add = 2 FLOPs) for the runner's models at their
// default input shapes; 0 for an unknown model name.
double model_forward_flops(const std::string& model);
// Estimated wall seconds of one job under the cost model (always finite and > 0).
double estimate_seconds(const jobs::JobParams& p, const CostModel& m);

struct SimJob {
  std::string id;
  Request req;
  double duration_s = 1.0;  // what the job really takes in the simulation
  double est_s = -1.0;      // what the scheduler believes (-1: same as duration_s)
  std::string phase;        // compare-by value; phases run one after another in first-seen order
  // Warm launches (SimOptions::warm): a job started on the very cores and GPUs where a job of the
  // same launch key ended takes that job's warm worker, and `warm_saving_s` less (its cold launch
  // and exit tail minus a warm job's set-up; 0 = unknown, as cold). The key:
  // jobs::process_key(params).text().
  std::string launch_key;
  double warm_saving_s = 0;
};

struct SimPlacement {
  double start_s = -1, end_s = -1;
  Allocation alloc;
  bool warm = false;  // started in a warm worker
};

struct PhaseFigures {
  std::string value;
  double start_s = 0, end_s = 0, makespan_s = 0;
  double gpu_util = 0, core_util = 0;  // busy resource-seconds / (capacity x makespan)
  std::vector<std::size_t> jobs;       // indices into the job list
};

struct SimResult {
  std::vector<SimPlacement> placements;  // by job index
  double makespan_s = 0;
  double gpu_util = 0, core_util = 0;
  std::vector<PhaseFigures> phases;  // one entry with value "" when no compare-by
};

struct SimOptions {
  std::string policy = "packed";
  std::size_t max_parallel = 0;
  // `gridrun run --launch warm` (docs/scheduler.md, "Warm launches"): a job's warm worker waits
  // `worker_idle_s` for the next job of its launch key on its cores; one of another key placed on
  // any of them retires it, as the local executor does.
  bool warm = false;
  double worker_idle_s = kWorkerIdleS;
};

// All jobs must be feasible (check_feasible first); throws std::invalid_argument otherwise.
SimResult simulate(const Cluster& cluster, const std::vector<SimJob>& jobs, const SimOptions& opts);

// Human summary: makespan, utilization, per-phase figures and a placement timeline with one row per
// job (truncated to `max_rows`), at most `width` columns.
std::string render_schedule(const Cluster& cluster, const std::vector<SimJob>& jobs, const SimResult& r,
                            int width, int max_rows);

}  // namespace gridrun::scheduler
