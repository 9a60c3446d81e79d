// The analysis tables users read after a run (per job, scaling over ranks, GPU vs CPU,
// convergence, one-large vs several-small phases), built from the loaded run's records and rendered
// by the shared table writer (base/table.hpp) as text, markdown, CSV or JSON.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/base/table.hpp"
#include "gridrun/hw/peaks.hpp"
#include "gridrun/report/phases.hpp"
#include "gridrun/report/run_model.hpp"
#include "gridrun/results/run_index.hpp"

namespace gridrun::report {

// What `gridrun report` was asked; each reporter reads the fields it needs.
struct ReportOptions {
  std::string input;                                         // RUN_DIR or a results.h5
  std::string format = "table";                              // table | markdown | csv | json
  std::string group_by;                                      // parameter name, or ""
  std::vector<std::pair<std::string, std::string>> filters;  // key=value, all must match
  int width = 100;                                           // text/markdown wrap width
  bool all = false;  // also the jobs of earlier grids of the run directory (load_run's LoadOptions)
  // html: the page to write (temporary file, then renamed), its roofs and its limits.
  std::string output;
  hw::RoofOptions roofline;
  int max_points = 500;       // per time series; longer series are thinned evenly
  int max_profiled_jobs = 6;  // top-operator charts (one per profiled job)
  // profile: operators shown per job.
  int profile_top = 15;
};

// The records that pass opts.filters; validates filters and group-by against the records
// (std::invalid_argument naming the flag).
std::vector<results::JobRecord> select_jobs(const std::vector<results::JobRecord>& all,
                                            const ReportOptions& opts);

// Validates filters/group-by against the records (std::invalid_argument naming the flag).
std::vector<base::Table> build_tables(const std::vector<results::JobRecord>& jobs,
                                      const std::vector<PhaseFigures>& phases, const ReportOptions& opts);
// The report of a loaded run: the verdict first (verdict.hpp), then build_tables, with a line under
// the jobs table when jobs of earlier grids were left out.
std::vector<base::Table> run_tables(const LoadedRun& run, const ReportOptions& opts);
// The line under the jobs table when jobs of earlier grids were left out (run.left_out > 0).
void note_left_out(std::vector<base::Table>& tables, const LoadedRun& run, const ReportOptions& opts);
// The verdict lines as a table: a paragraph for table/markdown, a "verdict" column for csv/json.
base::Table verdict_table(const std::vector<std::string>& lines, const std::string& format);
// base::render_tables with opts.format and opts.width.
void render(const std::vector<base::Table>& tables, const ReportOptions& opts, std::ostream& out);

}  // namespace gridrun::report
