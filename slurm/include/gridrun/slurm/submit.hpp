// `gridrun submit`, `gridrun status` and `gridrun cancel` as library calls (app/cmd_submit.cpp and
// app/cmd_status.cpp only parse flags and print).
//
// Why the run directory is the only state: a submission may be repeated, interrupted half-way, or
// looked at from another login node days later. Per-job Slurm ids live in state.json (run::JobRecord::
// slurm_job_id, "1234_7"); every sbatch call is also appended to runs/<name>/slurm/submitted.tsv
// (submission, kind, array name, Slurm id) so `cancel` and `status` find the arrays and collect
// jobs. What is really going on is always re-derived by merging Slurm's view with the files on disk.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/slurm/script.hpp"
#include "gridrun/slurm/slurm_cli.hpp"
#include "gridrun/status/status.hpp"

namespace gridrun::slurm {

struct SubmitOptions {
  std::string grid_file;
  // Checks a job's HDF5 data file where the submit host sees it (jobs::LoadOptions::
  // check_data_file); set by the command (dataset::check_job_data_file), unset in unit tests.
  std::function<std::string(const jobs::JobParams&)> check_data_file;
  // Builds a model=torchscript job's model where the submit host can (jobs::LoadOptions::
  // check_model_file); set by the command (scheduler::ModelChecker), unset in unit tests.
  std::function<std::string(const jobs::JobParams&)> check_model_file;
  std::string out_dir = "runs";
  ScriptOptions script;                  // run_dir/run_name/grid_file/out_dir/submission are filled in
  std::optional<std::size_t> max_array;  // unset: MaxArraySize from scontrol, else 1000
  bool pack_nodes = false;
  std::optional<int> node_cores;  // packing: cores per node (unset: sinfo, else required)
  bool dry_run = false;
  // "phase=VALUE": that compare-by phase's jobs again, from scratch and together (their
  // checkpoints removed, finished or not), as `gridrun run --rerun phase=VALUE` does: what the
  // report advises for a phase that ran in more than one sitting. "" = only what is missing.
  std::string rerun;
  // Part of a grid, as for `gridrun run` (jobs/select.hpp): `--set` values every job takes (part of
  // the ids) and `--only` selectors a job must all match to be submitted. The run directory still
  // records every job of the grid.
  std::vector<std::pair<std::string, jobs::Value>> overrides;
  // `--repeats N`: every compare-by phase N times, interleaved (jobs::LoadOptions::repeats; 0 = the
  // grid's compare.repeats). Each repeat's arrays wait for the previous phase's, as phases do.
  int repeats = 0;
  std::vector<jobs::Selector> only;
};

struct SubmitResult {
  std::string run_dir;
  ScriptSet scripts;
  std::vector<std::string> array_ids;  // parallel to scripts.arrays (empty on dry run)
  std::string collect_id;
  std::size_t total_jobs = 0, submitted_jobs = 0, skipped_jobs = 0;
};

// Loads the grid (jobs::GridError on bad input), prepares the run directory (run::prepare_run,
// as `gridrun run` does),
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

// `gridrun status` of a run: the scheduler's merge (scheduler/status.hpp: state.json, job files,
// results files) with Slurm's view overlaid when `cli` is given and the run has Slurm ids. Print
// with status::print_status.
status::RunStatus run_status(const std::string& run_dir, const SlurmCli* cli);

struct CancelResult {
  std::vector<std::string> cancelled;  // Slurm ids scancel was given
  bool drained = false;                // squeue lists none of them any more
};
// scancel for every array and collect job of the run that squeue still lists, then waits (bounded
// by `wait_s`, polling squeue) until none is listed; marks unfinished jobs interrupted in state.json.
CancelResult cancel_run(const std::string& run_dir, const SlurmCli& cli, double wait_s, std::ostream& log);

}  // namespace gridrun::slurm
