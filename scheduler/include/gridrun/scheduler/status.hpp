// `gridrun status` of a run directory: what each job is doing or how it ended, merged from
// state.json, the job files and the results files, with an optional overlay of a batch system's
// live view (slurm/ adds Slurm's; a local run has none).
//
// Why the scheduler owns the merge: the run directory and its outcome vocabulary (run::JobOutcome) are
// the scheduler's, and the same rules serve local and Slurm runs. The order is fixed: records from
// state.json, then the overlay (fresher), then the results files, which have the last word on how
// a job ended.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "gridrun/run/run_dir.hpp"

namespace gridrun::scheduler {

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
};

// Fills rows from a batch system's view: called with the rows built from state.json and the job
// files (disk already read) and the records they came from, before the results files' last word.
// A row the overlay saw must have slurm_state set (the results merge treats it as fresher).
using StatusOverlay = std::function<void(RunStatus&, const std::map<std::string, run::JobRecord>&)>;

// Throws std::invalid_argument when run_dir is not a run directory. Never throws on a damaged
// state.json (it is listed in `damaged`; the next `gridrun run` quarantines it).
RunStatus run_status(const run::RunDir& dir, const StatusOverlay& overlay = {});

enum class StatusFormat { Table, Json, Csv };
// `width`: the table's (the terminal's); a long reason is cut to fit it with "…" (table only).
void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os, int width = 100);

}  // namespace gridrun::scheduler
