// `gridrun submit`, `gridrun status` and `gridrun cancel` as library calls (app/cmd_slurm.cpp only
// parses flags and prints).
//
// Why the run directory is the only state: a submission may be repeated, interrupted half-way, or
// looked at from another login node days later. Per-job Slurm ids live in state.json (JobRecord::
// slurm_job_id, "1234_7"); every sbatch call is also appended to runs/<name>/slurm/submitted.tsv
// (submission, kind, array name, Slurm id) so `cancel` and `status` find the arrays and collect
// jobs. What is really going on is always re-derived by merging Slurm's view with the files on disk.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/jobs/job.hpp"
#include "gridrun/scheduler/run_dir.hpp"
#include "gridrun/slurm/script.hpp"
#include "gridrun/slurm/slurm_cli.hpp"

namespace gridrun::slurm {

struct SubmitOptions {
  std::string grid_file;
  std::string out_dir = "runs";
  ScriptOptions script;                 // run_dir/run_name/grid_file/out_dir/submission are filled in
  std::optional<std::size_t> max_array; // unset: MaxArraySize from scontrol, else 1000
  bool pack_nodes = false;
  std::optional<int> node_cores;        // packing: cores per node (unset: sinfo, else required)
  bool dry_run = false;
};

struct SubmitResult {
  std::string run_dir;
  ScriptSet scripts;
  std::vector<std::string> array_ids;   // parallel to scripts.arrays (empty on dry run)
  std::string collect_id;
  std::size_t total_jobs = 0, submitted_jobs = 0, skipped_jobs = 0;
};

// Loads the grid (jobs::GridError on bad input), prepares the run directory like `gridrun run`,
// decides which jobs still need submitting, writes and (unless dry_run) submits the scripts.
SubmitResult submit(const SubmitOptions& opts, const SlurmCli& cli, std::ostream& log);

// Bundles small GPU jobs (ranks < node_gpus) into whole-node job-step sets with disjoint GPUs and
// cores; jobs that are not small are returned in `rest`.
struct Packing {
  std::vector<Bundle> bundles;
  std::vector<jobs::Job> rest;
};
Packing pack_jobs(const std::vector<jobs::Job>& jobs, int node_gpus, int node_cores,
                  const ScriptOptions& opts);

struct JobStatusRow {
  std::string id;
  scheduler::JobState state = scheduler::JobState::Pending;
  std::string slurm_id, slurm_state, elapsed, node, disk;  // disk: results file status or ""
  int exit_code = -1;
  int restarts = 0;
  int attempts = 0;
};

struct RunStatus {
  std::string name, run_dir;
  std::vector<JobStatusRow> jobs;                // sorted by id
  std::map<scheduler::JobState, std::size_t> counts;
  bool slurm_queried = false;                    // some jobs had Slurm ids
  bool slurm_answered = false;
  std::vector<std::string> collect_ids;         // of every submission, oldest first
  std::string collect_state;                     // Slurm state of the latest collect job
  std::vector<std::string> damaged;              // quarantined files (*.damaged*), relative paths
};

// Merges state.json, Slurm (when `cli` is given and the run has Slurm ids) and the results files.
RunStatus run_status(const std::string& run_dir, const SlurmCli* cli);

enum class StatusFormat { Table, Json, Csv };
void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os);

struct CancelResult {
  std::vector<std::string> cancelled;  // Slurm ids scancel was given
  bool drained = false;                // squeue lists none of them any more
};
// scancel for every array and collect job of the run that squeue still lists, then waits (bounded
// by `wait_s`, polling squeue) until none is listed; marks unfinished jobs interrupted in state.json.
CancelResult cancel_run(const std::string& run_dir, const SlurmCli& cli, double wait_s,
                        std::ostream& log);

}  // namespace gridrun::slurm
