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

#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/run_options.hpp"

namespace gridrun::scheduler {

// Runs the grid. Bad input throws std::invalid_argument (exit 2) before anything is written;
// a locked run directory throws run::RunLocked.
RunOutcome run_grid(const RunOptions& opts, std::ostream& out);

// RunOptions, RunOutcome and default_train_bin are run_options.hpp (included here).

}  // namespace gridrun::scheduler
