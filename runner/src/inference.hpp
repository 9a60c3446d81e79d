// The inference loop of one job (`task: inference`, inference.cpp, docs/runner.md), declared
// beside its definition: trainer.hpp declares only what trainer.cpp defines.
#pragma once

#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/options.hpp"

namespace gridrun::runner {

// task=inference: timed forward passes over the test split (inference.cpp, docs/runner.md).
// Returns kExitCompleted, or kExitInterrupted on SIGTERM/SIGUSR1 (nothing to checkpoint). Throws
// BadInput for a checkpoint that does not exist or does not fit the model.
int infer(const RunnerOptions& opts, Communicator& comm);

}  // namespace gridrun::runner
