// Every option of gridrun-train, in one struct filled by Boost.Program_options in options.cpp.
//
// Why the job parameters are flags too: a job normally comes from a job file written by the planner
// (`--job runs/x/jobs/<id>.json`), but a user debugging a model wants `gridrun-train --model mlp
// --epochs 1` without a grid. One flag per row of jobs::param_table() is generated, so a new
// parameter is a flag without touching this file. Overrides on top of a job file change the job id
// (the id always equals job_id(params) of what actually ran).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/run/worker_channel.hpp"

namespace gridrun::runner {

struct RunnerOptions {
  std::string job_file;         // --job; empty: parameters from defaults + flags, run "manual"
  std::string out_dir;          // --out: results directory (writer makes <out>/<id>.h5.partial)
  std::string checkpoint_dir;   // --checkpoint-dir; default <out>/../checkpoints/<id>
  bool resume = false;          // --resume: continue from the latest checkpoint if one exists
  std::int64_t log_every = 10;  // --log-every: progress line + per-rank timing gather period (steps)
  double util_hz = 10.0;        // --util-hz: utilisation sampling rate (0 = off)
  std::string dump_params;      // --dump-params FILE: final parameters as raw float32 (rank 0)
  std::string init_out;         // --init-out FILE.h5: initial weights by name (rank 0)
  std::string dump_logits;      // --dump-logits FILE: inference's per-sample logits, raw float32
  bool quiet = false;           // --quiet: no progress lines
  // Peak for MFU in /summary (hardware facts, not job parameters, so they do not change ids):
  double peak_tflops = 0;  // --peak-tflops: overrides the built-in GPU table and the probe
  std::string probe_file;  // --probe: `gridrun probe` output for CPU peaks (default: its cache)
  // Launcher facts (set by `gridrun run`, not job parameters):
  std::string heartbeat_file;      // --heartbeat FILE: rank 0 touches it each step (at most 1/s)
  double gpu_memory_fraction = 0;  // --gpu-memory-fraction: cap of this job's GPU memory (0 = none)
  long owner_pid = 0;              // --owner-pid PID: stop (checkpoint, exit 75) when PID is gone
  std::string owner_host;          // --owner-host: PID is a process of this host (other hosts ignore it)
  // --launched-at UNIX: when the launcher started this job's command (mpirun/srun), seconds since
  // the epoch; 0 = unknown. With main_unix and the process's own start it splits the time before
  // the first step into launch, library load and set-up (/summary time_*_s, docs/results.md).
  double launched_at = 0;
  double main_unix = 0;  // when main() began (set by main, not a flag)
  // Seconds of the set-up spent creating the communicator (MPI init, NCCL comm): the process's
  // first job only; a chained or warm job has none. What separates a warm job's set-up from a
  // cold one's (/summary time_comm_s; calibration's warm launch). Set by main, not a flag.
  double comm_s = 0;
  // --then-job FILE (repeatable): after this job completes, train each of these job files in the
  // same process, on the same ranks and communicator, one after another (`gridrun calibrate`: the
  // step times of several configurations for one launch; docs/scheduler.md). Each must have this
  // job's device, ranks and threads. A chained job's launched_at is shifted by the time the
  // earlier jobs took, so its /summary launch is this process's launch plus its own set-up.
  std::vector<std::string> then_jobs;
  // --worker DIR: a warm worker (docs/scheduler.md, "Warm launches"). After each job that
  // completes, rank 0 reports it on DIR's done pipe and every rank waits on its own task pipe for
  // the next job of the same device, ranks and threads, until the launcher closes the pipes or
  // the process's memory grew past `worker_rss_growth`.
  std::string worker_dir;
  // --worker-rss-growth F: a worker retires after a job that leaves its resident memory above
  // F times what it was after its first job (plus 256 MiB of slack).
  double worker_rss_growth = 1.5;
  bool warm = false;  // this job runs in a process that ran another job before (not a flag)
  // --check-checkpoint DIR: only read that checkpoint folder (state.pt, every rng-*.pt) and exit
  // 0 (readable) or 1; run by Checkpointer::load in a process of its own before it trusts a
  // checkpoint, so one that crashes LibTorch's reader takes only that process down.
  std::string check_checkpoint;
  // --count-flops: print the job's model cost (model_cost) and exit; needs the job, not --out.
  // It is also the model check the planner runs before anything launches (archive check, load,
  // trial forward): a model that cannot be built is one line and exit 2.
  bool count_flops = false;
  // Hidden test hooks (documented in docs/runner.md, not in --help):
  std::int64_t stop_after_step = 0;  // raise SIGTERM in-process after this global step
  std::int64_t fail_at_step = 0;     // throw on rank `fail_rank` after this global step
  std::int64_t hang_at_step = 0;     // rank `fail_rank` stops taking part in collectives
  std::int64_t fail_rank = 1;

  // The job: resolved parameters, identity and launcher facts.
  jobs::JobParams job;
  std::string id;
  std::string run = "manual";
  std::map<std::string, std::string> meta;
  // The parameter flags given (`--lr 0.1`: lr), parsed: over the job file of every job the process
  // runs (the launched one, chained ones, a warm worker's next ones).
  jobs::Params parameter_flags;
  bool checkpoint_dir_given = false;  // --checkpoint-dir was given (else <out>/../checkpoints/<id>)
};

// Parses argv; prints --help or --version and returns std::nullopt-equivalent `help_shown = true`.
struct ParseResult {
  RunnerOptions options;
  bool help_shown = false;
};
// Throws BadInput naming the flag (or the job file and key) on any bad value.
ParseResult parse_options(int argc, const char* const* argv);

// Checks done right after parsing: every value (jobs::check_values) and every combination
// (jobs::check, the same rules `gridrun plan` applies to a grid, e.g. epochs=0 needs max_steps,
// half precision needs a GPU). Throws BadInput naming the parameter.
void validate(const RunnerOptions& o);

// The options of the next job of a warm worker, from the typed task (no command line rebuilt and
// parsed again): `first`'s flags, the task's job file (with the parameter flags over it), its
// resume, heartbeat and launch time, no --then-job. Throws BadInput when the job cannot run on
// these ranks (as chained_options).
RunnerOptions next_job_options(const run::WorkerTask& task, const RunnerOptions& first);

// The options of one --then-job FILE: `first`'s flags with FILE as the job (the parameter flags
// over it) and no --then-job. Throws BadInput when FILE cannot follow `first` in its process
// (another device, other ranks or threads, not a training job).
RunnerOptions chained_options(const std::string& job_file, const RunnerOptions& first);

}  // namespace gridrun::runner
