// The calibrated schedule of a planned grid (private to the scheduler: `gridrun simulate`,
// `gridrun run` before it launches, and `gridrun calibrate` for its budget).
#pragma once

#include <string>
#include <vector>

#include "grid_plan.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/scheduler/calibration.hpp"
#include "gridrun/scheduler/simulate.hpp"

namespace gridrun::scheduler {

struct PredictOptions {
  SimOptions sim;
  std::string created;  // ISO time for the record
};

struct PredictedGrid {
  std::vector<SimJob> jobs;
  SimResult result;
  run::Prediction record;
  std::size_t alone = 0, grouped = 0, uncalibrated = 0;  // where the jobs' durations came from
};

// Each job alone first; then a job that starts beside others takes the figures of the calibrated
// group it would run in (that exact group, else one of the same size holding its configuration,
// else alone), and the schedule is computed again. A job whose configuration is not calibrated
// keeps the cost model's estimate.
PredictedGrid predict_grid(const GridPlan& plan, const Calibration& cal, const CostModel& cost,
                           const PredictOptions& opts);

// The groups of configurations that run side by side in `r` (a schedule of `plan`'s jobs; sorted
// multisets of config keys, more than one member), most frequent first.
std::vector<std::vector<std::string>> side_by_side_groups(const GridPlan& plan, const SimResult& r);

// What prediction.json records of a simulated schedule (calibrated or not): per phase its
// makespan, jobs and most jobs running at once, per job its seconds.
struct RecordInfo {
  std::string source;  // "calibration", "cost model", ...
  std::string policy, created;
};
run::Prediction prediction_record(const std::vector<SimJob>& jobs, const SimResult& r,
                                  const RecordInfo& info);

}  // namespace gridrun::scheduler
