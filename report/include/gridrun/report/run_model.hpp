// The loaded-run model every report renders from: a run's job records, the job files as read (to
// the depth the reporter asks) and its phases, loaded once per command.
//
// Why one model: each report used to read the job files itself, some two or three times; now
// load_run reads each file once (results/run_reader.hpp) and every reporter (reporter.hpp) gets
// the same model.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/report/collect.hpp"
#include "gridrun/report/phases.hpp"
#include "gridrun/results/run_index.hpp"
#include "gridrun/results/run_reader.hpp"

namespace gridrun::report {

// What a report reads: the job records of a RUN_DIR (job files) or of a results.h5 (its /jobs
// table), the run directory (job files are `run_dir / record.file`) and the phases.
struct LoadedRun {
  std::string run_dir;
  std::vector<results::JobRecord> jobs;
  // The job files as read, to the depth asked: a RUN_DIR's, or those behind a results.h5's records
  // (its links; the phase figures need them). Only the readable ones, so not aligned with `jobs`.
  std::vector<results::JobData> data;
  std::vector<PhaseFigures> phases;
  std::string compare_by;    // the current grid's compare-by key ("" if none or unknown)
  std::size_t left_out = 0;  // jobs of the run directory not in its current grid (grid.yaml)
  // The command that reruns this run's grid, for advice: "gridrun run RUN/grid.yaml --out OUT", or
  // "gridrun submit RUN/grid.yaml --slurm --out OUT" for a run that `gridrun submit` made.
  std::string rerun_prefix;
  // id -> its JobData, for the records whose file was readable.
  std::map<std::string, const results::JobData*> data_by_id() const;
};

struct LoadOptions {
  results::Depth depth = results::Depth::Summary;
  // Also the jobs of earlier grids of the run directory (by default only the current grid.yaml's).
  bool all = false;
  bool whole_when_read = false;  // results::FolderReadOptions::whole_when_read
  // A run directory's job files as the caller read them already (`gridrun run`, which indexed
  // them for collect): taken (moved from) instead of reading them again when read at this depth
  // and whole_when_read; else ignored.
  ScannedRun* scanned = nullptr;
};

// Throws std::invalid_argument when `input` is neither a run directory nor a results.h5; skipped
// job files are named on `log`.
LoadedRun load_run(const std::string& input, std::ostream& log, const LoadOptions& opts = {});

// The job files of `records` (of `run`) read whole (Depth::Full: tables and profile), in their
// order; an unreadable one is a JobData with an empty id. For a report that needs the tables of a
// few jobs of a run loaded to its summaries (the HTML report's drawn series). A record's data that
// load_run read whole already is copied from run.data, not read again.
std::vector<results::JobData> read_whole_jobs(const LoadedRun& run,
                                              const std::vector<const results::JobRecord*>& records);

}  // namespace gridrun::report
