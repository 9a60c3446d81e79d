// sbatch scripts for a set of jobs: a pure function of the jobs and the options (golden-tested).
//
// Why job arrays indexed into a job-list file: one array per resource shape keeps the queue small
// (10,000 jobs are a handful of array records, not 10,000 submissions), and the list file
// (`runs/<name>/slurm/<array>.jobs`, line i+1 = task i) keeps the script itself readable and
// identical for every task. Each line names one job, or, in packed mode, several job steps that
// run side by side in one whole-node allocation, by id only: a job's shape (ranks, threads, nodes,
// a packed step's planned GPUs and cores) is read from its job file by `gridrun job-shape` when
// the task runs (issue 59: it was written again as text beside the job file). Where
// --jobs-per-task N > 1, an ID is a chain `ID+ID+...` of up to N jobs that run one after another on
// the same ranks (warm: in one warm worker, docs/slurm.md "Several jobs per task"). Under srun each
// packed step asks for its own `--gres=gpu:R` and `--exact` cores, so Slurm keeps steps on disjoint
// devices and cores (also where cgroups constrain devices); under mpirun the placement's GPU
// indices are mapped onto the allocation's CUDA_VISIBLE_DEVICES.
//
// The script body runs the launcher in the background so the batch shell can take the signal Slurm
// sends before the time limit (`--signal=B:USR1@N` reaches only the batch shell, and a trap runs
// only while the shell `wait`s), forwards it (and TERM) to the runner, and requeues the job when the
// runner exits with the checkpoint code 75; on restart it passes `--resume`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/run/launch.hpp"

namespace gridrun::slurm {

// What an array's tasks all ask Slurm for: their jobs' footprint (device, ranks over `nodes` hosts,
// threads_per_rank cores per rank, per node: --ntasks-per-node, --gres), time limit and phase.
// Slurm gives a job whole GPUs: gpu_share (jobs_per_gpu) is not part of a shape.
struct Shape {
  jobs::Footprint fp;       // jobs::footprint of the array's jobs
  std::int64_t time_s = 0;  // 0 = no --time line (partition default)
  bool packed = false;      // whole-node allocation running several job steps
  std::string phase;        // compare-by value: phases are submitted one after another
  bool operator==(const Shape& o) const {
    return fp.device == o.fp.device && fp.ranks == o.fp.ranks &&
           fp.threads_per_rank == o.fp.threads_per_rank && fp.nodes == o.fp.nodes && time_s == o.time_s &&
           packed == o.packed && phase == o.phase;
  }
};

// One job step inside a packed allocation; gpus/cores are node-local ids from the scheduler's
// placement (which jobs share a node is its decision; see the file comment for who picks devices).
struct PackedStep {
  std::string job_id;
  std::int64_t ranks = 1, threads = 1;
  std::int64_t time_s = 0;
  std::string gpus;   // "0,1"
  std::string cores;  // "0,1" (recorded; Slurm's --exact accounting keeps steps on disjoint cores)
};
using Bundle = std::vector<PackedStep>;

struct ScriptOptions {
  std::string run_dir;  // absolute runs/<name>
  std::string run_name;
  std::string grid_file;  // absolute; shown in the resubmit hint
  std::string out_dir;    // absolute --out; shown in the resubmit hint
  std::string train_bin = "gridrun-train";
  // What a task starts for a command job (a grid's command:, docs/own-script.md): gridrun-exec runs
  // the user's program on each rank. A command grid's jobs are all command jobs, so a submission
  // starts one or the other (submit.cpp), never both.
  std::string exec_bin = "gridrun-exec";
  std::string gridrun_bin = "gridrun";  // the collect script's, and the task body's worker-msg
  int submission = 1;                   // array names start with s<submission>-
  std::string partition, account, qos, constraint;
  std::string default_time;              // --time: for jobs whose time_limit is empty
  std::vector<std::string> sbatch_args;  // extra "#SBATCH <arg>" lines, after the template
  std::string template_text;             // contents of --template (checked by check_script_options):
                                         // its #SBATCH/comment lines join the header, the rest
                                         // follows every #SBATCH line
  std::string template_path;             // the --template file, for messages
  std::size_t max_array = 1000;          // tasks per array at most
  std::size_t throttle = 0;              // %N: tasks of one array running at once; 0 = no limit
  std::string launcher = "srun";         // srun | mpirun
  std::string signal = "B:USR1@120";     // a limit <= the warning time gets it at half the limit
  std::int64_t node_gpus = 4;            // packed allocations ask for the whole node
  bool pack_nodes = false;               // the submission used --pack-nodes (for the resubmit hint)
  // The submission's part of the grid, for the resubmit hint: `--set KEY=VALUE` (the overrides are
  // part of every job id, so a resubmit without them would submit other jobs) and `--only
  // KEY=VALUE[,VALUE...]` (without them it would submit the rest of the grid too). Each is one
  // flag's value, in the order given.
  std::vector<std::string> set_args, only_args;
  // --network: interfaces (eth0, ib0) or subnets (10.1.0.0/16), comma separated, that ranks on
  // different hosts talk over: Open MPI's btl/oob_tcp_if_include and NCCL_SOCKET_IFNAME (names
  // only; NCCL takes no subnets). Empty: the libraries choose (every non-loopback interface).
  std::string network;
  // --launch and --jobs-per-task: a task runs up to jobs_per_task jobs of its array's shape one
  // after another (a packed task: that many bundles of the same layout, each step a chain), with
  // warm = the chain's jobs after the first run in the first one's warm worker (gridrun-train
  // --worker; single-node shapes only: the worker's pipes do not cross hosts) instead of a launch
  // each. The task's time limit is the sum of its jobs'.
  run::Launch launch = run::Launch::Cold;
  std::size_t jobs_per_task = 1;  // >= 1
};

// The site's Slurm options, one row each (issue 46: each was spelled in five places). The flags of
// `submit` and `calibrate --slurm` (app/), their validation (check_script_options), the #SBATCH
// lines and the resubmit hint in every script's header all come from this table; a new site
// option is one row here (and a field in ScriptOptions).
enum class SiteLine {
  every_script,  // #SBATCH --FLAG=VALUE in the array scripts and the collect job
  arrays,        // ... in the array scripts only
  apart,         // not an #SBATCH line of its own (time: per array; network: exported variables)
};
struct SiteOption {
  const char* flag;   // "partition": the flag --partition (and sbatch's option of that name)
  const char* alias;  // a one-letter flag ("A": -A), or ""
  std::string ScriptOptions::*field;
  const char* allowed;  // characters allowed beside letters, digits, '_', '-', '.' (Slurm's sets)
  const char* what;     // for the error message: "'x' is not <what>"
  const char* help;     // the flag's description
  SiteLine line;
};
const std::vector<SiteOption>& site_options();

struct ArrayScript {
  std::string name;  // "s1-a0-cpu-r2-t1"
  Shape shape;
  std::vector<std::vector<std::string>> tasks;  // job ids per array task (1 unless packed)
  std::string script_path, list_path;           // absolute
  std::string script, job_list;                 // file contents
};

struct ScriptSet {
  std::vector<ArrayScript> arrays;
  std::string collect_path, collect_script;  // submitted with --dependency=afterany:<ids>
};

// Every value that lands in a generated script, checked before anything is written: no control
// character in any flag or path (a newline would turn the rest of a #SBATCH or comment line into
// shell code); partition, account, QoS and constraint in Slurm's own character sets; --sbatch-arg
// an option; --template plain lines with every #SBATCH before the first command. Throws
// std::invalid_argument naming the flag (and the template's line). generate_scripts calls it too.
void check_script_options(const ScriptOptions& opts);

// Groups `jobs` (in grid order) by shape into arrays split at max_array, appends one array per
// packed time limit for `bundles`, and renders every file. Throws std::invalid_argument on a bad
// option value (naming the flag).
ScriptSet generate_scripts(const std::vector<jobs::Job>& jobs, const std::vector<Bundle>& bundles,
                           const ScriptOptions& opts);

Shape job_shape(const jobs::Job& job, const ScriptOptions& opts);

// "1:30:00", "2-00:00:00": the form written to --time.
std::string format_time(std::int64_t seconds);

// Writes the set's list files and scripts (list first, each via temp file + rename).
void write_script_set(const ScriptSet& set);

}  // namespace gridrun::slurm
