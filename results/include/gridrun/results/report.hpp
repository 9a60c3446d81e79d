// `gridrun report`: the analysis tables users read after a run (per job, scaling over ranks,
// GPU vs CPU, convergence, one-large vs several-small phases), as text, markdown, CSV or JSON.
//
// The tables are rendered by the shared table writer (table.hpp).
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/results/collect.hpp"
#include "gridrun/results/phases.hpp"
#include "gridrun/results/table.hpp"

namespace gridrun::results {

struct ReportOptions {
  std::string input;                                         // RUN_DIR or a results.h5
  std::string format = "table";                              // table | markdown | csv | json
  std::string group_by;                                      // parameter name, or ""
  std::vector<std::pair<std::string, std::string>> filters;  // key=value, all must match
  int width = 100;                                           // text/markdown wrap width
};

// What a report reads: the job records of a RUN_DIR (job files) or of a results.h5 (its /jobs
// table), the run directory (job files are `run_dir / record.file`) and the recorded phases.
// Every job file is read once, to `depth` (run_reader.hpp), and everything is rendered from this.
struct LoadedRun {
  std::string run_dir;
  std::vector<JobRecord> jobs;
  // The job files as read, to the depth asked: a RUN_DIR's, or those behind a results.h5's records
  // (its links; the phase figures need them). Only the readable ones, so not aligned with `jobs`.
  std::vector<JobData> data;
  std::vector<Phase> phases;
  // id -> its JobData, for the records whose file was readable.
  std::map<std::string, const JobData*> data_by_id() const;
};
// Throws std::invalid_argument when `input` is neither; skipped job files are named on `log`.
LoadedRun load_run(const std::string& input, std::ostream& log, Depth depth = Depth::Summary);

// The records that pass opts.filters; validates filters and group-by against the records
// (std::invalid_argument naming the flag).
std::vector<JobRecord> select_jobs(const std::vector<JobRecord>& all, const ReportOptions& opts);

// Validates filters/group-by against the records (std::invalid_argument naming the flag).
std::vector<Table> build_tables(const std::vector<JobRecord>& jobs, const std::vector<Phase>& phases,
                                const ReportOptions& opts);
// render_tables with opts.format and opts.width.
void render(const std::vector<Table>& tables, const ReportOptions& opts, std::ostream& out);

// `gridrun report --profile`: the `top` operators of every profiled job (by self device time for
// GPU profiles, else self CPU time), one table per job, like the published operator tables.
void write_profile_report(const ReportOptions& opts, int top, std::ostream& out, std::ostream& log);

// Loads records (index file, else job files), builds and renders. Skipped files go to `log`.
void write_report(const ReportOptions& opts, std::ostream& out, std::ostream& log);

}  // namespace gridrun::results
