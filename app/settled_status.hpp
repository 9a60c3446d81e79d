// The status of a whole run as `gridrun status` and `gridrun ls` both read it (app/cmd_status.cpp):
// from the run's status cache (RUN_DIR/.cache/status, run/run_summary.hpp's rules) while nothing
// of the run changed, brought up to date from the results files that changed, else merged afresh
// (Slurm's view overlaid) and cached when settled. One function, so that `ls` after `status` (or
// the other way round) reads the run once.
#pragma once

#include <string>

#include "gridrun/slurm/slurm_cli.hpp"
#include "gridrun/status/status.hpp"

namespace gridrun::app {

// RunStatus::job_params is empty when it came from the cache (the cache does not hold them).
status::RunStatus settled_status(const std::string& run_dir, const slurm::SlurmCli& cli);

}  // namespace gridrun::app
