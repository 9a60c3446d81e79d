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
  std::string filter_flag = "--filter";  // the flag the filters came from, as messages name it
  int width = 100;                       // text/markdown wrap width
  bool all = false;  // also the jobs of earlier grids of the run directory (load_run's LoadOptions)
  // html: the page to write (temporary file, then renamed), its roofs and its limits.
  std::string output;
  hw::RoofOptions roofline;
  int max_points = 500;       // per time series; longer series are thinned evenly
  int max_profiled_jobs = 6;  // top-operator charts (one per profiled job)
  // profile: operators shown per job.
  int profile_top = 15;
  // --sort METRIC[:asc|desc] and --top N: the jobs table's rows by a summary figure (parse_job_sort),
  // only the first `top` of them (0: all).
  std::string sort;
  std::size_t top = 0;
  // The jobs table's rows at most (0: all): the first `max_job_rows` in its order and every failed
  // or diverged job after them, with a note of how many are not shown. `gridrun report --rows`
  // (kReportJobRows unless given) for the text, markdown and HTML reports; csv and json keep all.
  std::size_t max_job_rows = 0;
  // A run directory's job files read already (LoadOptions::scanned): `gridrun run`'s closing report.
  ScannedRun* scanned = nullptr;
};

// The default of `gridrun report --rows`: a run of 100,000 jobs printed 200,000 lines of jobs table
// (and took seconds to lay them out); the table's order and the failed jobs are what a reader scans.
inline constexpr std::size_t kReportJobRows = 50;

// `report --sort METRIC[:asc|desc]`: which figure orders the jobs table, and which way.
struct JobSort {
  std::string metric;  // as given, without ":asc"/":desc"
  bool descending = true;
};

// The names --sort takes besides /summary figures: the jobs table's own columns (test_acc,
// samples/s, p50_ms, ...), each standing for the figure the column shows.
const std::vector<std::string>& sort_column_names();
// Which way a metric sorts unless told: smallest first for losses, times and costs (a name with
// one of the words loss, latency, energy, bytes, mem, comm, time, target, foreign, throttled; else
// one with the unit word s or ms but not per, as wall_s, step_s_p50, p50_ms; and the columns
// p50_ms, p95_ms, comm%, peak_mem), largest first for the rest (accuracies, rates such as
// samples_per_s and flops_per_s, mfu, utilization, epochs).
bool sorts_descending(const std::string& metric);
// Parses METRIC[:asc|desc]. METRIC must be a column of sort_column_names(), a figure any of
// `jobs` has in /summary, or one of the figures gridrun writes (docs/results.md); else
// std::invalid_argument "--sort X: unknown metric 'X'; did you mean 'Y'? (expected ...: the list)".
JobSort parse_job_sort(const std::string& text, const std::vector<results::JobRecord>& jobs);
// A job's value of the metric (NaN when the job has none).
double sort_value(const results::JobRecord& job, const std::string& metric);

// The records that pass opts.filters; validates filters and group-by against the records
// (std::invalid_argument naming the flag).
std::vector<results::JobRecord> select_jobs(const std::vector<results::JobRecord>& all,
                                            const ReportOptions& opts);
// The same, as pointers into `all` (no copy of 100,000 records).
std::vector<const results::JobRecord*> select_job_refs(const std::vector<results::JobRecord>& all,
                                                       const ReportOptions& opts);
// The selected jobs in the jobs table's order (by the parameters that vary, or by opts.sort), the
// first opts.top of them: what the HTML report draws the series of (its first --rows).
std::vector<const results::JobRecord*> jobs_in_table_order(const std::vector<results::JobRecord>& all,
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
