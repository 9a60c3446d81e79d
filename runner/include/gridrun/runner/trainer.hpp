// The training loop of one job, and the inference loop: data-parallel over the given communicator, metrics
// into the results file (rank 0), checkpoints, signals and stop conditions. See docs/runner.md for the step
// anatomy.
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

// task=inference: timed forward passes over the test split (inference.cpp, docs/runner.md).
// Returns kExitCompleted, or kExitInterrupted on SIGTERM/SIGUSR1 (nothing to checkpoint). Throws
// BadInput for a checkpoint that does not exist or does not fit the model.
int infer(const RunnerOptions& opts, Communicator& comm);

// The job's model built on its data set's input, as a job builds it, without a communicator:
// forward FLOPs per sample (counted for model=torchscript) and parameters. gridrun-train
// --count-flops. Throws BadInput as the job would.
struct ModelCost {
  double flops_per_sample = 0;
  std::int64_t params = 0;
};
ModelCost model_cost(const jobs::JobParams& job);

// model_cost could not read the job's data set, so it built no model: --count-flops says so with
// kDataUnreadable before the reason, and the planner's model check leaves the model unchecked
// with a warning instead of refusing it (a built-in set's files may exist only where jobs run).
struct DataUnreadable : BadInput {
  using BadInput::BadInput;
};
inline constexpr const char* kDataUnreadable = "the data set cannot be read here, so no model was built: ";

}  // namespace gridrun::runner
