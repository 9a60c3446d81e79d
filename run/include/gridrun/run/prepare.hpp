// Preparing a run directory for `gridrun run` and `gridrun submit`, and quarantining a damaged file
// of it. Here rather than in scheduler/ because both launchers share it and slurm/ must not need
// the local scheduler to write a run directory.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::jobs {
struct Expansion;
struct Job;
}  // namespace gridrun::jobs

namespace gridrun::run {

// Preparing a run directory, written once for `gridrun run` and `gridrun submit`: the folders, the
// lock (run only: a submission does not run anything here), grid.yaml, state.json (a damaged one is
// quarantined: the results files decide what is finished) with a record for every job of the grid
// (id and compare-by phase), and damaged job files quarantined and written again from the grid
// (with_phase), so that readers of job files (report) still find every job.
struct PrepareOptions {
  std::string grid_file;   // copied to grid.yaml when its content changed
  bool lock = false;       // hold runs/<name>/lock for the lifetime of PreparedRun
  bool slurm_dir = false;  // also create slurm/
  // The `--set KEY=VALUE` overrides the jobs were planned with, recorded in state.json so that
  // readers that load the grid.yaml copy (report) find the same ids (RunState::overrides).
  std::vector<std::string> overrides;
  // `--repeats N` the jobs were planned with (0: the grid's compare.repeats), recorded likewise.
  int repeats = 0;
};

struct PreparedRun {
  std::unique_ptr<RunLock> lock;  // set when PrepareOptions::lock
  RunState state;                 // loaded (or empty) state with one record per job of the grid
  // state.json as it was read, before the grid's records were added (nullopt: no state.json, or a
  // damaged one): a run that changes nothing need not write it again.
  std::optional<RunState> on_disk;
};

// Each job's record in `s.jobs`, in the jobs' order (records_of by their ids).
std::vector<JobRecord*> records_of(RunState& s, const std::vector<jobs::Job>& jobs);

// Throws RunLocked when the run is held by another gridrun; warnings about quarantined files go
// to `log`.
PreparedRun prepare_run(const RunDir& dir, const jobs::Expansion& ex, const PrepareOptions& opts,
                        std::ostream& log);

// "KEY=VALUE" per override, as PrepareOptions::overrides records them (jobs::parse_overrides reads
// them back).
std::vector<std::string> override_texts(const std::vector<std::pair<std::string, jobs::Value>>& overrides);

// " --set KEY=VALUE ... --only KEY=VALUE[,VALUE] ..." of a selection (overrides as override_texts,
// selectors as typed), for a command a message tells the user to run: it must select the same jobs.
std::string selection_flags(const std::vector<std::pair<std::string, jobs::Value>>& overrides,
                            const std::vector<jobs::Selector>& only);

// The compare-by phase of a job ("" without compare-by or when the job lacks the key): the key's
// value, and for a later repeat of it (compare.repeats, params.repeat = r > 0) "VALUE#N" with
// N = r + 1, so that every repeat is a phase of its own (own sitting, record and Slurm arrays).
std::string phase_of(const jobs::Expansion& ex, std::size_t job_index);
// A phase key taken apart: the compared value and the repeat (0 for the first). "#N" is read as a
// repeat only when N is a number >= 2.
struct PhaseKey {
  std::string value;
  int repeat = 0;
};
PhaseKey split_phase(const std::string& phase);
// "ranks=2", "ranks=2 #3" (the third measurement of ranks=2); the bare key without compare_by.
std::string phase_label(const std::string& compare_by, const std::string& phase);
// What a phase is, in words that hold whatever the compare-by key: "2 jobs x 1 rank, side by side",
// "1 job x 2 ranks", "1 job x 1 rank x 2 threads", "4 jobs x 1-2 ranks, one after another" (ranges
// where its jobs differ; GPU jobs count GPU ranks). One wording for the report, simulate and export.
std::string arrangement_text(const std::vector<const jobs::JobParams*>& jobs, bool side_by_side);

// The job as its job file is written before any placement: meta.phase set.
jobs::Job with_phase(const jobs::Job& job, const std::string& phase);

// A damaged file is never trusted and never fatal: base::quarantine renames it aside, and a
// warning naming it, the cause and the new name goes to `log`. Throws when it cannot be moved.
void quarantine_damaged(const std::string& path, const std::string& why, std::ostream& log);

}  // namespace gridrun::run
