// The plan of a grid, private to the scheduler: what `gridrun run`, `simulate`, `calibrate` and
// the prediction all start from (grid_plan.cpp). Its own component so that the run loop and the
// prediction take a plan without including the command (run_grid.cpp) that makes one.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/run_options.hpp"
#include "gridrun/scheduler/simulate.hpp"

namespace gridrun::scheduler {

// A validated grid on a resolved cluster: what both the plan (--dry-run, --simulate) and the real
// run start from. Nothing has been written yet.
struct GridPlan {
  jobs::Expansion ex;  // the jobs to run: with RunOptions::only, the selected ones (ids kept)
  // With RunOptions::only, the whole grid, so that the run directory records every job of it
  // (status and report show them all); empty otherwise.
  jobs::Expansion whole;
  Cluster cluster;
  std::vector<Request> req;              // per job; GPUs counted in slots when GPUs are shared
  std::vector<int> share;                // per job: jobs_per_gpu (1 = a whole GPU)
  std::vector<std::string> phase;        // per job: compare-by value ("" without compare-by)
  std::vector<std::string> phase_order;  // phase values in order of first appearance
  // RunOptions::cost with the FLOPs of the grid's model=torchscript files, counted by gridrun-train.
  CostModel cost;
};

// Loads and validates the grid and resolves the cluster (bad input: std::invalid_argument);
// writes nothing. Warnings go to `out`.
GridPlan plan_grid(const RunOptions& o, std::ostream& out);

}  // namespace gridrun::scheduler
