// `gridrun status` of a run directory: what each job is doing or how it ended, merged from
// state.json, the job files and the results files, with an optional overlay of a batch system's
// live view (slurm/ adds Slurm's; a local run has none).
//
// Why the scheduler owns the merge: the run directory and its outcome vocabulary (run::JobOutcome) are
// the scheduler's, and the same rules serve local and Slurm runs. The order is fixed: records from
// state.json, then the overlay (fresher), then the results files, which have the last word on how
// a job ended.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::status {

struct JobStatusRow {
  std::string id;
  run::JobOutcome state = run::JobOutcome::Pending;
  std::string slurm_id, slurm_state, elapsed, node, disk;  // disk: results file status or ""
  int exit_code = -1;
  int restarts = 0;
  int attempts = 0;
  // Hosts of each start of the runner on the results file (its /attempts; "host1,host2" for a
  // multi-host attempt), oldest first: where a job moved after a node failure.
  std::vector<std::string> attempt_hosts;
  // A failed job's one-line reason (run/failure.hpp: the results file's exit_reason, else the
  // runner's line in its log, else where to look); "" for a job that did not fail.
  std::string reason;
  // Progress of a running job, from its live results file's /steps rows (-1 / NaN: not known).
  // total_steps: what it will run (max_steps, else epochs x steps_per_epoch, the first limit
  // that comes); epochs: the epochs it will run (0: bounded by max_steps only).
  std::int64_t step = -1, total_steps = -1, epoch = -1, epochs = -1;
  double elapsed_s = std::nan("");  // since its launch (running) or launch to exit (ended)
  // Seconds until it ends: from its own progress (eta_source "progress"), else from the run's
  // prediction.json ("prediction"); predicted_eta_s is the prediction's whenever there is one.
  double eta_s = std::nan(""), predicted_eta_s = std::nan("");
  std::string eta_source;
  // The job's value of each RunStatus::varying parameter, in that order.
  std::vector<std::string> params;
  // A job of an earlier grid or selection (an earlier `--set`, an edited grid): the run's grid as
  // its last `gridrun run` expanded it no longer holds it. Shown with its own parameters (its job
  // file) because it ran; one that never ran is not shown at all (RunStatus::earlier_hidden).
  bool earlier = false;
  // What state.json recorded of the job, before its results file had the last word: what
  // patch_status merges a changed results file with again. Not shown.
  run::JobOutcome recorded_state = run::JobOutcome::Pending;
  int recorded_attempts = 0;
  std::string recorded_host;
};

struct RunStatus {
  std::string name, run_dir;
  std::vector<JobStatusRow> jobs;  // sorted by id
  std::map<run::JobOutcome, std::size_t> counts;
  bool slurm_queried = false;  // some jobs had Slurm ids and Slurm was asked
  bool slurm_answered = false;
  std::vector<std::string> collect_ids;  // of every submission, oldest first
  std::string collect_state;             // Slurm state of the latest collect job
  std::vector<std::string> damaged;      // quarantined files (*.damaged*), relative paths
  // The parameters whose value differs between the run's jobs (as `gridrun plan` shows them),
  // from the job files; a column each in the table, csv and json.
  std::vector<std::string> varying;
  // Every parameter of each job as the run resolved them (aligned with `jobs`): what `status
  // --only` selects on, as `run --only` did.
  std::vector<jobs::JobParams> job_params;
  // Jobs of an earlier grid or selection that never started: they will not run (the current grid
  // does not hold them), so they are neither shown nor counted as pending (issue 58).
  std::size_t earlier_hidden = 0;
  bool has_prediction = false;  // prediction.json was read
  // What the reader should know beyond the table, one line each, naming the file (issue 57: jobs
  // state.json calls finished whose results files are missing, which are not counted done).
  std::vector<std::string> warnings;
  // What the reader should know that is no problem (jobs of an earlier grid), one line each.
  std::vector<std::string> notes;
  // A local run whose lock nobody holds but whose jobs were cut short (a kill -9 or a Ctrl-C of
  // `gridrun run`): the command that resumes it; "" otherwise.
  std::string resume_command;
};

// A RunStatus as bytes and back, for the run's status cache (RUN_DIR/.cache/status, app's
// `gridrun status`: a finished run of 100,000 jobs is then one read, not a merge of state.json,
// the grid and every results file). Every field but job_params (what --only selects on: a
// status with --only is computed afresh) and run_dir (the caller's spelling). decode_status throws
// std::runtime_error on bytes that are not a whole encoding of this version.
std::string encode_status(const RunStatus& st);
RunStatus decode_status(std::string_view bytes);
// Nothing in it can change without a file of the run changing: no Slurm job (Slurm's view
// changes on its own), none running or queued. Only such a status is cached.
bool status_is_settled(const RunStatus& st);

// The seconds a job still needs at the rate of its current attempt: `steps` and `wall_s` are its
// /steps rows (step numbers and seconds since the job started), rows at or below
// `resumed_from_step` belong to earlier attempts and are left out (another process, another
// speed). NaN when fewer than two rows of this attempt, no time between them, or no known end
// (total_steps <= 0); 0 once the last row reached total_steps.
double progress_eta_s(const std::vector<double>& steps, const std::vector<double>& wall_s,
                      std::int64_t total_steps, std::int64_t resumed_from_step = 0);
// The steps a job will run: max_steps and epochs x steps_per_epoch, whichever limit comes first
// (0 means unbounded); -1 when neither is known.
std::int64_t planned_steps(std::int64_t max_steps, std::int64_t epochs, std::int64_t steps_per_epoch);
// The seconds left of a predicted launch-to-exit time after `elapsed_s`, never below 0; NaN when
// either is unknown.
double predicted_eta_s(double predicted_job_s, double elapsed_s);

// Fills rows from a batch system's view: called with the rows built from state.json and the job
// files (disk already read) and the records they came from, before the results files' last word.
// A row the overlay saw must have slurm_state set (the results merge treats it as fresher).
using StatusOverlay = std::function<void(RunStatus&, const std::map<std::string, run::JobRecord>&)>;

// Throws std::invalid_argument when run_dir is not a run directory. Never throws on a damaged
// state.json (it is listed in `damaged`; the next `gridrun run` quarantines it).
RunStatus run_status(const run::RunDir& dir, const StatusOverlay& overlay = {});

// Brings a settled status (status_is_settled) of `dir` up to date after the results files
// `changed` (names in results/, run/run_summary.hpp read_cache_changes) were rewritten, and only
// they: reads those files alone and merges each again with its row's recorded state, as run_status
// would (issue 60: a status after 10 of 100,000 files changed cost the whole merge, 5.5 s). False,
// leaving `st` as it was, when a change needs the whole merge: a name that is no finished results
// file, a live `.partial` beside one, a job without a row.
bool patch_status(RunStatus& st, const run::RunDir& dir, const std::vector<std::string>& changed);

enum class StatusFormat { Table, Json, Csv };
// `width`: the table's (the terminal's); a long reason is cut to fit it with "…" and columns are
// left out until the rest fits (table only).
void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os, int width = 100);

}  // namespace gridrun::status
