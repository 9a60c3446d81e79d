// What `gridrun run` (run_grid.hpp), `simulate` and `calibrate` are asked to do: the options struct the
// command line fills, and what a run came to. A header of its own because the steps of a run (the plan, the
// run loop, the calibration) take it and run.hpp's run_grid calls those steps: with RunOptions in run.hpp,
// each step would include the header of the command that includes it (a cycle inside scheduler/).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/select.hpp"
#include "gridrun/run/launch.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/simulate.hpp"

namespace gridrun::scheduler {

// `--launch` of run, simulate and calibrate unless given (RunOptions::launch).
inline constexpr run::Launch kDefaultLaunch = run::Launch::Warm;

struct RunOptions {
  std::string grid;  // GRID.yaml
  // Part of a grid (docs/scheduler.md): `--set` values every job takes (jobs::LoadOptions::
  // overrides, so they are part of the ids), and `--only` selectors a job must all match to run
  // here. The selected jobs keep their ids; the run directory still records every job of the grid.
  std::vector<std::pair<std::string, jobs::Value>> overrides;
  std::vector<jobs::Selector> only;
  std::string out = "runs";  // parent of runs/<name>
  std::string policy = "packed";
  std::size_t max_parallel = 0;  // 0 = as many as fit
  int retries = 1;               // extra attempts per job and invocation
  // "", "failed" (failed from scratch), "all" (everything) or "phase=VALUE" (that compare-by
  // phase's jobs from scratch, together: a phase measured again in one sitting)
  std::string rerun;
  // `--repeats N`: every compare-by phase measured N times, interleaved (jobs::LoadOptions::
  // repeats; 0 = the grid's compare.repeats).
  int repeats = 0;
  bool dry_run = false;   // print the placement plan and commands; launch nothing
  bool simulate = false;  // print the simulated schedule; launch nothing
  ResourceOptions resources;
  std::string train_bin;  // gridrun-train; default next to the gridrun binary
  std::string executor = "local";
  CostModel cost;
  bool tty = false;  // live status line instead of one line per event
  int width = 100;   // terminal columns for the timeline and status line
  int timeline_rows = 40;
  // --simulate: "table" (the schedule for people) or "json" (makespan_s, phases, jobs; the same
  // phase names as state.json's measured ones); `against`: a run directory whose measured
  // makespans are put beside the prediction.
  std::string format = "table";
  std::string against;
  // Watchdog (docs/scheduler.md): a job whose results file is final but whose processes are still
  // there after exit_grace_s is ended and recorded with a warning; a job whose rank 0 has not
  // heartbeat for heartbeat_timeout_s (0 = never checked) is ended and fails with that reason.
  double exit_grace_s = 60;
  double heartbeat_timeout_s = 900;
  // --launch (docs/scheduler.md, "Warm launches"): "cold" starts one process per job; "warm" lets
  // the ranks of a finished job take the next job of the same command, and a warm worker idle for
  // worker_idle_s leaves. A job that fails in a warm worker is retried cold once, not counted.
  // Warm by default (issue 58): 9.1x the makespan of 200 tiny CPU jobs here, 4.8x on Slurm, 8x on
  // an H200 (48 s cold, 6 s warm), with bitwise-equal losses (docs/scheduler.md, "Warm launches").
  run::Launch launch = kDefaultLaunch;
  double worker_idle_s = kWorkerIdleS;
};

// What a run came to (run_grid, and the run loop that makes it).
struct RunOutcome {
  std::string run_dir;
  std::size_t total = 0, completed = 0, failed = 0, skipped = 0;
  std::size_t to_run = 0;  // jobs this invocation set out to run (0: the run had nothing to do)
  bool interrupted = false;
  bool launched = false;  // false for --dry-run and --simulate
  // Whether results.h5 (gridrun collect) may be out of date: a job ran, a results file was read
  // afresh or quarantined, or results.h5 is missing or older than the results folder's index. A
  // finished run started again (nothing to run) then skips collect (10,000 jobs: 0.7 s).
  bool index_stale = true;
  int exit_code = 0;  // 0 all completed, 1 otherwise
};

// The simulation's options for a run with these options (policy, parallelism, warm launches).
SimOptions sim_options_of(const RunOptions& o);

// gridrun-train next to the running binary (/proc/self/exe's folder), else "gridrun-train" on PATH.
std::string default_train_bin();
// gridrun-exec beside this program's binary (command jobs, issue 56), else "gridrun-exec" on PATH.
std::string default_exec_bin();

}  // namespace gridrun::scheduler
