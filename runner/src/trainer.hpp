// The training loop of one job (inference: inference.hpp; a model's cost: model_cost.hpp): data-parallel over
// the given communicator, metrics into the results file (rank 0), checkpoints, signals and stop conditions.
// See docs/runner.md for the step anatomy.
#pragma once

#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/options.hpp"

namespace gridrun::runner {

// Runs the job to its end; returns kExitCompleted (also for target reached), kExitDiverged (a
// non-finite or runaway loss: results status "diverged") or kExitInterrupted
// (after a checkpoint, on SIGTERM/SIGUSR1). Throws BadInput for bad input, anything else for a
// runtime failure; the caller (main) turns exceptions into an exit code and a job-wide abort.
int train(const RunnerOptions& opts, Communicator& comm);

}  // namespace gridrun::runner
