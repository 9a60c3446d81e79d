// The exit codes of gridrun-train: the contract between the runner and every launcher (the local
// executor, the Slurm task body, which gets them as shell variables from slurm/ script.cpp).
//
// Why here: the runner produces them and the scheduler, the Slurm scripts and the status read them;
// one definition below all of them keeps them from drifting.
#pragma once

namespace gridrun::run {

inline constexpr int kExitCompleted = 0;  // completed, or reached target_accuracy
inline constexpr int kExitFailure = 1;    // a runtime failure; retried by `gridrun run --retries`
inline constexpr int kExitBadInput = 2;   // flags, job file, data files, unsupported device
// The loss diverged (non-finite, or above kDivergedLoss for kDivergedSteps steps in a row): the
// job's own doing, like bad input, so it is never retried (its status is "diverged").
inline constexpr int kExitDiverged = 3;
inline constexpr double kDivergedLoss = 1000.0;
inline constexpr int kDivergedSteps = 50;
// Interrupted after writing a checkpoint (SIGTERM/SIGUSR1); rerun with --resume.
inline constexpr int kExitInterrupted = 75;
// Recorded for a job the watchdog ended because rank 0 stopped heartbeating (as timeout(1) does).
inline constexpr int kExitNoHeartbeat = 124;

}  // namespace gridrun::run
