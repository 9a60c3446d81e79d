// One rank of a command job: start the user's program with the environment torch.distributed's
// env:// expects and gridrun's own variables, pass its output through, and (rank 0) record its
// protocol lines into the job's results file with gridrun-train's schema, so status, report,
// export and the verdict read it as any job. docs/own-script.md is the user's side of this.
//
// Why a process between mpirun and the program (and not the program under mpirun directly): the
// program knows nothing of HDF5, heartbeats, the owner watch or exit-code conventions, and must
// not have to; and mpirun's own rank variables are not the ones PyTorch reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gridrun/exec/options.hpp"

namespace gridrun::exec {

// Which rank this process is, from the launcher's environment (Open MPI's OMPI_COMM_WORLD_*,
// Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, PMI_RANK/PMI_SIZE); 0 of 1 without any.
struct RankFacts {
  int rank = 0, world = 1, local_rank = 0, local_world = 1;
};
RankFacts rank_facts();
// The number of tasks on node `node` from Slurm's compressed per-node list
// (SLURM_STEP_TASKS_PER_NODE: "2(x3),1" is 2, 2, 2, 1); nullopt when absent or malformed.
std::optional<int> tasks_on_node(const char* list, int node);
// Slurm's compressed host list (SLURM_STEP_NODELIST: "host[1-2,5],gpu01") one name each, in
// order, zero padding kept ("node[08-10]": node08 node09 node10); empty when malformed. Rank 0
// records the step's hosts with it (its ranks share no communicator to gather them over).
std::vector<std::string> expand_hostlist(const std::string& list);

// Runs the job to its end and returns the exit code (run/exit_codes.hpp: 0 completed, 1 failed,
// 2 bad input or the program's exit 2, 3 diverged, 75 interrupted). Throws std::invalid_argument
// for a job file that is no command job, std::runtime_error for what failed before the program ran.
int run_job(const ExecOptions& o);

}  // namespace gridrun::exec
