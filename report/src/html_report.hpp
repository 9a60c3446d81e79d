// `gridrun report RUN --html FILE`: one self-contained HTML page with the report's charts and the
// same tables as the text report.
//
// Why this shape: the page must open offline, weeks later, on a laptop, so Chart.js (MIT) and its
// license are embedded in the gridrun binary at build time and written into the page, and the
// data goes in as one JSON block that the page's script turns into charts. A chart without data
// is left out, never an empty or broken canvas, and named with the reason in one line per reason
// at the top (<section id="not-shown">). The page reports on itself for tests: when its script is
// done, <body> carries data-charts (charts drawn), data-charts-ok (charts with at least one drawn
// element), data-notes (charts left out for want of data) and data-errors (script errors and
// console.error calls, texts in data-error-text).
#pragma once

#include <ostream>
#include <string>

#include "gridrun/report/run_model.hpp"
#include "gridrun/report/tables.hpp"

namespace gridrun::report {

struct HtmlReportResult {
  int jobs = 0, charts = 0, notes = 0;  // charts with data; charts left out for want of data
};

// Throws std::invalid_argument for a missing output folder (before anything is read).
void check_html_output(const std::string& output);

// Writes opts.output from `run` (loaded at Depth::Summary: the tables, the roofline and the counts
// of every selected job; the time series of the jobs table's first opts.max_job_rows jobs, read
// whole here: read_whole_jobs).
// Throws std::invalid_argument for a bad filter or group-by.
HtmlReportResult write_html_report(LoadedRun run, const ReportOptions& opts);

}  // namespace gridrun::report
