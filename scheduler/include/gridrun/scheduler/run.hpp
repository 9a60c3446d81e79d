// `gridrun run` as a library call: the whole life of a run directory on this machine.
//
// Why in the library and not in app/: it is the scheduler's main use, it is tested end to end
// from tests/scheduler, and the command-line file only parses flags into RunOptions. Collecting
// and reporting at the end stay in app/ (they belong to results/).
//
// Sequence: load and validate the grid; resolve the cluster; reject infeasible jobs (exit 2,
// nothing written); lock the run directory; reconcile the state with the disk (finished result
// files win, jobs a crashed run left running are stopped so they checkpoint); write job files;
// then, phase by phase (compare-by), let the placement engine start jobs through the executor,
// retry failures with --resume, and save state.json after every event. Inside, the validation is
// plan_grid, the real run a RunLoop (src/run_loop.hpp: reconcile, launch, on exit, on signal,
// close phase) printing through Progress (src/progress.hpp); the run directory is prepared by
// run::prepare_run (run/prepare.hpp), as for `gridrun submit`.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/select.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/simulate.hpp"

namespace gridrun::scheduler {

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
};

struct RunOutcome {
  std::string run_dir;
  std::size_t total = 0, completed = 0, failed = 0, skipped = 0;
  bool interrupted = false;
  bool launched = false;  // false for --dry-run and --simulate
  // Whether results.h5 (gridrun collect) may be out of date: a job ran, a results file was read
  // afresh or quarantined, or results.h5 is missing or older than the results folder's index. A
  // finished run started again (nothing to run) then skips collect (10,000 jobs: 0.7 s).
  bool index_stale = true;
  int exit_code = 0;  // 0 all completed, 1 otherwise
};

// Runs the grid. Bad input throws std::invalid_argument (exit 2) before anything is written;
// a locked run directory throws run::RunLocked.
RunOutcome run_grid(const RunOptions& opts, std::ostream& out);

// gridrun-train next to the running binary (/proc/self/exe's folder), else "gridrun-train" on PATH.
std::string default_train_bin();

}  // namespace gridrun::scheduler
