// How a job's processes start: `--launch` of run, simulate, calibrate and submit (docs/scheduler.md,
// "Warm launches"; docs/slurm.md). A closed set typed once, as base::Device is: its text exists only
// at the edges (the flag, a Slurm script's LAUNCH= line, messages), never compared inside.
#pragma once

#include <string>

namespace gridrun::run {

enum class Launch {
  Cold,  // one process (mpirun/srun) per job
  Warm,  // the ranks of a finished job take the next job of the same command
};

std::string to_string(Launch l);  // "cold", "warm"
// "cold" or "warm"; anything else throws std::invalid_argument "FLAG: expected cold or warm, got 'X'".
Launch parse_launch(const std::string& text, const std::string& flag = "--launch");

}  // namespace gridrun::run
