// `gridrun report`'s outputs behind one interface, chosen by name (as google/benchmark chooses its
// console/JSON/CSV reporters): "table", "markdown", "csv", "json" (the analysis tables), "html"
// (a self-contained page with charts, html_report.hpp) and "profile" (per-job operator tables).
//
// Why an interface: every output renders the same loaded-run model (run_model.hpp), loaded once at
// the depth the reporter asks for; a new output is one more implementation, not one more reading
// of the job files.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/report/run_model.hpp"
#include "gridrun/report/tables.hpp"

namespace gridrun::report {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string name() const = 0;
  // How deep load_run must read the job files for this output.
  virtual results::Depth depth() const = 0;
  // Whether load_run keeps the files it reads from disk whole (FolderReadOptions::
  // whole_when_read): a reporter that reads some jobs whole later (read_whole_jobs) then opens none
  // of them twice.
  virtual bool whole_when_read() const { return false; }
  // Validates what this output needs of `opts` before anything is read (std::invalid_argument).
  virtual void check(const ReportOptions& /*opts*/) const {}
  // Renders `run` (moved in: a reporter may take its rows); output to `out` (the html reporter
  // writes opts.output and names it on `log`), notes and skipped files to `log`. Bad options
  // (filters, group-by, output folder) throw std::invalid_argument naming the flag.
  virtual void report(LoadedRun run, const ReportOptions& opts, std::ostream& out, std::ostream& log) = 0;
};

// The names make_reporter knows, in the order --help lists them.
const std::vector<std::string>& reporter_names();
// Throws std::invalid_argument for an unknown name (listing the known ones).
std::unique_ptr<Reporter> make_reporter(const std::string& name);

struct ReportResult {
  // A job of the report was running (its file changes in place, not by a rename): the report may
  // differ a moment later even if no file of the run was renamed (run/run_summary.hpp's "live").
  bool live = false;
};

// load_run(opts.input) at the reporter's depth, then reporter.report().
ReportResult write_report(const ReportOptions& opts, Reporter& reporter, std::ostream& out,
                          std::ostream& log);

}  // namespace gridrun::report
