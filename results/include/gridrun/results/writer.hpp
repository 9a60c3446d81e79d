// The per-job HDF5 results file: crash-safe, readable while written, self-describing.
//
// Why this shape: one 1-D chunked dataset per metric column (reads well from h5py/pandas), all
// columns extended together, and a committed-rows counter attribute-free (a dataset `/steps/rows`)
// written last, so a reader of a killed job's `.partial` file trusts only complete rows. With HDF5
// 1.10 SWMR, every object must exist before H5Fstart_swmr_write, so the writer creates the whole
// layout up front (it knows the number of ranks and GPUs from JobFileInfo) and, at finish(),
// closes the SWMR file, reopens it normally to set the final status and `/summary`, and renames
// `<id>.h5.partial` to `<id>.h5`.
//
// Only rank 0 writes; other ranks send their per-step figures over the runner's communicator.
// The full schema is in docs/results.md; its vocabulary (rows, status, summary) is format.hpp. Thread-safety:
// every method may be called from any thread (one internal mutex), so a UtilSampler's sink may call
// append_util while training appends steps.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/results/format.hpp"

namespace gridrun::results {

// Everything known at job start; written as root attributes before SWMR starts.
struct JobFileInfo {
  std::string id;
  std::string run;
  // The job's parameters, typed: written as the `params` attribute (jobs::canonical_json) and as
  // one `param.NAME` attribute each (bool as 0/1), in name order. No JSON in between.
  jobs::JobParams params;
  std::map<std::string, std::string> str_attrs;   // facts, one attribute each ("hostnames",
  std::map<std::string, std::int64_t> int_attrs;  //   "cpu_model", "torch_version", ...)
  std::map<std::string, double> float_attrs;
  int ranks = 1;
  int gpus = 0;                       // devices sampled in /util (0 for cpu jobs)
  std::string gpu_absent_reason;      // why GPU columns are absent (e.g. "NVML not found")
  std::int64_t resume_from_step = 0;  // > 0 when the job resumed: rows continue
  // This attempt, one row of /attempts (appended on every create or resume; docs/results.md):
  // where rank 0 ran, every rank's host, and the batch system's job id and restart count when the
  // job runs under one (empty / -1 otherwise).
  std::string attempt_hostname, attempt_hostnames, attempt_batch_id, attempt_sitting;
  std::int64_t attempt_restart_count = -1;
  // append_* also flush on their own when the last flush is older than this (crash safety without
  // a timer thread); <= 0 disables the automatic flush.
  double flush_interval_s = 30.0;
};

class JobWriter {
 public:
  // Creates `<dir>/<id>.h5.partial` (replacing a stale one unless info.resume_from_step > 0, in
  // which case existing rows are kept and new rows continue after them).
  // Resume: reopens `<id>.h5.partial` (or a finished `<id>.h5`, renamed back), clearing the flags a
  // killed writer left; keeps step rows with step < resume_from_step, epoch rows before the epoch
  // of the first dropped step, and all util rows; sets status back to "running". Throws
  // std::invalid_argument if the file's ranks/gpus differ from info. No file: starts a fresh one.
  // Errors: std::runtime_error naming the path and the failing HDF5 call (file:line).
  static std::unique_ptr<JobWriter> create(const std::string& dir, const JobFileInfo& info);
  virtual ~JobWriter() = default;

  virtual void append_step(const StepRow& row) = 0;  // buffered; cheap (< 10 us)
  virtual void append_epoch(const EpochRow& row) = 0;
  virtual void append_util(const UtilRow& row) = 0;  // thread-safe w.r.t. append_step
  // Writes buffered rows and flushes the file; called at epoch ends and by a timer (>= every 30 s).
  virtual void flush() = 0;
  // Operator table stored as `/profile` by finish() (SWMR forbids new objects before that). The
  // last call wins; never calling it leaves the file without `/profile`.
  virtual void set_profile(const std::vector<OpProfile>& ops) = 0;
  // Ends the file: final status, exit reason, end time, summary; renames to `<id>.h5`.
  // `/summary` holds the figures the writer derives from the file's own rows (derive_summary in
  // summary.hpp: step_s_p50/p95 after param.timing_warmup_steps, samples_per_s, comm_share, ...)
  // merged with `summary`, whose entries win (the runner adds e.g. flops_per_s, mfu).
  // Later calls to any method throw std::logic_error.
  virtual void finish(Status status, const std::string& exit_reason, const Summary& summary) = 0;
  virtual std::string path() const = 0;
};

// The results file of a job that ended before it ran (bad flags, a program that could not start):
// status failed with `why`, written beside any other file under a temporary name and renamed into
// place. A job that already has a file (`<id>.h5` or `.partial`: an earlier attempt's rows, a
// resumed job) keeps it unchanged: a refused resume never costs recorded rows. Never throws:
// returns "" when written or left alone, else what went wrong (the caller says it on stderr).
// gridrun-train and gridrun-exec both record early failures with it.
std::string record_early_failure(const std::string& dir, const JobFileInfo& info, const std::string& why);

}  // namespace gridrun::results
