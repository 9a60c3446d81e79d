// `gridrun calibrate GRID --slurm`: the calibration of scheduler/calibrate.hpp measured where a
// Slurm grid will run, on the cluster's nodes, through sbatch and srun like the real jobs.
//
// Why separate from the local calibration: on Slurm the launcher is the task script and srun (or
// mpirun inside the allocation), and no process of ours watches the job end. Each configuration
// is submitted alone (one submission at a time, so configurations do not share nodes while they
// are measured) under RUN_DIR/calibration/, and its figures are read from its job file like a
// local one's. The calibration is stored with host "slurm"; `gridrun simulate GRID --cluster
// FILE` (the cluster's nodes) predicts from it. With `cluster_file`, the groups of configurations
// the policy would run side by side on those nodes are then submitted together, one group per
// submission, each member long enough to overlap the others while it steps, as locally.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "gridrun/scheduler/calibrate.hpp"
#include "gridrun/slurm/script.hpp"
#include "gridrun/slurm/slurm_cli.hpp"

namespace gridrun::slurm {

struct SlurmCalibrateOptions {
  std::string grid_file;
  std::string out_dir = "runs";
  ScriptOptions script;           // partition, time, network, launcher, train_bin, gridrun_bin
  std::int64_t steps = 20;        // timed steps per configuration after its warm-up
  std::string cluster_file;       // the cluster's nodes, for the side-by-side groups ("": none)
  std::string policy = "packed";  // placement the prediction will use
  double group_budget_s =
      scheduler::kMinBudgetS;  // groups are co-run while the calibration cost less than this
  double group_train_s = scheduler::kGroupTrainS;  // a co-run member trains about this long
  double timeout_s = 1800;                         // per configuration, from its submission to its end
  double poll_s = 1;                               // squeue polling period while waiting
};

// Writes RUN_DIR/calibration.json (host "slurm"). Bad input throws std::invalid_argument before
// anything is submitted; a configuration that does not complete is named on `out` and left out.
scheduler::CalibrateOutcome calibrate_on_slurm(const SlurmCalibrateOptions& opts, const SlurmCli& cli,
                                               std::ostream& out);

}  // namespace gridrun::slurm
