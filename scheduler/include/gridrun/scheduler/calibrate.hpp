// Calibration: a few real steps of every distinct configuration of a grid, where it will run, so
// that `gridrun simulate` predicts from measurements instead of a FLOPs table.
//
// Why: "one large job or several small ones" turns on what a cost model cannot know: how long
// mpirun, process start, library and data load take (a large share of short jobs), the real step
// time at each ranks x batch per rank, and how much side-by-side jobs slow each other down on
// shared cores and memory bandwidth (Gavel, Lucid). Published predictors that measure (Optimus,
// Pollux, Habitat) beat those that model; see ../shared/research/prediction.md. So `gridrun
// calibrate` runs each configuration alone for `steps` steps after its timing warm-up, then
// co-runs the groups of configurations the chosen placement policy would run side by side, and
// stores the figures in RUN_DIR/calibration.json, keyed by host and by the gridrun-train binary
// (a rebuild, a new LibTorch: calibrate again). docs/scheduler.md, "Predicting a grid before
// running it", has the model and the measured error.
// The figures and calibration.json are calibration.hpp; this is the command that measures them.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/scheduler/calibration.hpp"
#include "gridrun/scheduler/run_options.hpp"

namespace gridrun::scheduler {

// Grids of a minute or more: the calibration's budget floor never lifts it above this share.
inline constexpr double kLongGridS = 60.0;
inline constexpr double kMaxLongGridShare = 0.25;
// The calibration budget's floor in seconds (`calibrate --min-budget`; on Slurm the groups' seconds)
// and how long a co-run member trains, so that the members of a side-by-side group overlap: the
// defaults of CalibrateOptions here and of slurm::SlurmCalibrateOptions.
inline constexpr double kMinBudgetS = 120;
inline constexpr double kGroupTrainS = 2.0;

struct CalibrateOptions {
  RunOptions run;           // grid, out, policy, max_parallel, resources, train_bin
  std::int64_t steps = 20;  // timed steps per configuration after its warm-up (capped_steps)
  // The whole calibration (alone and side by side) stays within this share of the grid's predicted
  // time, or min_budget_s, whichever is more; side-by-side groups are measured while it does (the
  // alone figures come first: no prediction without them). For a grid of kLongGridS or more the
  // floor is at most kMaxLongGridShare of it (issue 44: a calibration of at most 25 % of any grid
  // that runs a minute or more); a shorter grid gets the whole floor, so that its groups are
  // measured (short_grid_note says when it is cheaper to run than to predict).
  double budget_share = 0.20;
  double min_budget_s = kMinBudgetS;
  double group_train_s = kGroupTrainS;  // a co-run member trains about this long (so the members overlap)
  bool share_process = true;            // chain configurations of one launch key (plan_alone_processes)
  // Launches of each configuration alone; its figures are each one's median over them. Why: a job
  // whose time is mostly start-up (a Python program's imports, data and rendezvous) varies by a
  // third from launch to launch, and one launch carries that into every prediction from it.
  int alone_launches = 1;
  static constexpr int kMaxAloneLaunches = 10;
  // A measurement during which other processes took more than kCalibrationLoadShare of the CPU is
  // taken again up to this many times; still disturbed, nothing is stored (CalibrateOutcome::refused)
  // unless `accept_load`, which keeps it without repeats and records the load in calibration.json.
  int disturbed_repeats = 1;
  bool accept_load = false;
};

struct CalibrateOutcome {
  Calibration cal;
  std::string file;                   // calibration.json written
  double predicted_s = std::nan("");  // the grid's predicted makespan with it
  double budget_s = 0;
  std::vector<std::string> skipped;  // groups left out over the budget
  int failed = 0;                    // calibration runs that did not complete
  int launches = 0;                  // gridrun-train processes started (alone and side by side)
  // Not "": the measurement still disturbed after its repeats ("other processes took 43 % of the
  // CPU while ... was measured, 2 time(s) ..."); nothing was stored (no calibration.json written).
  std::string refused;
};

// The groups the placement policy runs side by side when the grid of `ro` (its cluster: this
// machine or `ro.resources.cluster_file`) is predicted with `cal`'s alone figures: per group the
// index of one job per member (a job of each member's configuration), most frequent group first.
// What `gridrun calibrate --slurm --cluster FILE` co-runs through Slurm.
std::vector<std::vector<std::size_t>> predicted_groups(const RunOptions& ro, const Calibration& cal,
                                                       std::ostream& log);

// Runs the calibration of `opts.run.grid` on this machine and writes RUN_DIR/calibration.json.
// Bad input throws std::invalid_argument before anything is run.
CalibrateOutcome calibrate_grid(const CalibrateOptions& opts, std::ostream& out);

}  // namespace gridrun::scheduler
