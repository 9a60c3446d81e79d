// The runner's exception types and exit codes: exceptions travel inside, and are converted to an
// exit code exactly once, in gridrun-train's main() (the process edge).
//
// Exit codes are the contract with launchers, defined once in run/exit_codes.hpp: 0 completed or
// target reached, 1 runtime failure, 2 bad input (flags, job file, data files, unsupported device),
// 75 interrupted after a checkpoint was written (SIGTERM/SIGUSR1; rerun with --resume).
#pragma once

#include <stdexcept>
#include <string>

#include "gridrun/run/exit_codes.hpp"

namespace gridrun::runner {

using run::kDivergedLoss;
using run::kDivergedSteps;
using run::kExitBadInput;
using run::kExitCompleted;
using run::kExitDiverged;
using run::kExitFailure;
using run::kExitInterrupted;

// Bad input of any kind: a flag, the job file, a data file, or a device this build cannot use.
// Derives from std::invalid_argument so that generic callers map it to exit 2 as well.
struct BadInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A collective or communicator failure (MPI/NCCL error code, timeout); carries rank and host.
struct CommError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gridrun::runner
