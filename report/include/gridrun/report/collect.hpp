// `gridrun collect RUN_DIR` -> RUN_DIR/results.h5, and the scan of a run's job files that it and
// the reports share.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "gridrun/results/run_index.hpp"
#include "gridrun/results/run_reader.hpp"

namespace gridrun::report {

// Job files of RUN_DIR/results (`<id>.h5`, else `<id>.h5.partial`), sorted by id, each read once
// (run_reader.hpp: one guarded child, the folder's index). Unreadable ones and job ids listed in
// RUN_DIR/jobs/*.json without any results file are in `skipped` as "<path>: <reason>" and left out
// of `records`; `data` holds each record's JobData to the depth asked, in the same order.
struct ScannedRun {
  std::vector<results::JobRecord> records;
  std::vector<results::JobData> data;
  std::vector<std::string> skipped;
  // How it was read: a later reader takes it only when it asks the same (LoadOptions::scanned).
  results::Depth depth = results::Depth::Summary;
  bool whole_when_read = false;
};
// `fo`: the depth asked and the like (its prune_index is set: the whole folder is read).
// `keep_data` false: `data` stays empty and each record takes what it needs from its job's data
// (collect at 100,000 jobs: no second copy of every summary and parameter set).
ScannedRun scan_results(const std::string& run_dir, results::FolderReadOptions fo, bool keep_data = true);
// The records only (Depth::Summary).
std::vector<results::JobRecord> scan_run_dir(const std::string& run_dir, std::vector<std::string>& skipped);

struct CollectOptions {
  std::string run_dir;
  bool quiet = false;  // no progress lines on `log`
  // The run directory's job files as the caller read them already (scan_results, any depth):
  // indexed from these instead of reading every file again. `gridrun run` reads its run once for
  // collect and the closing report (at 100,000 jobs each read decodes 100,000 records: issue 60).
  const ScannedRun* scanned = nullptr;
};

struct CollectResult {
  std::string index_path;
  std::size_t jobs = 0;
  std::vector<std::string> skipped;  // "<path>: <reason>"
};

// Writes RUN_DIR/results.h5 atomically (temporary file + rename); running it again rebuilds it.
// Skipped files are named on `log`. Throws std::invalid_argument if RUN_DIR has no results/ folder.
CollectResult collect(const CollectOptions& opts, std::ostream& log);

}  // namespace gridrun::report
