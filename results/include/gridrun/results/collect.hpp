// The run index: `gridrun collect RUN_DIR` -> RUN_DIR/results.h5.
//
// Why an index file: users open one file to get a one-row-per-job table (ids, parameters, status,
// summary figures) and reach every job's full data through HDF5 external links, without copying
// data; `gridrun report` reads either the index or the job files directly. Layout in
// docs/results.md ("Run index").
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"

namespace gridrun::results {

// One row of /jobs: what report and collect need from a job file.
struct JobRecord {
  std::string id, status, exit_reason, file;  // file: relative to the run dir
  RecordedParams params;
  Summary summary;  // /summary, or derived from rows if unfinished
};

JobRecord record_of(const JobData& job, const std::string& relative_file);

// Job files of RUN_DIR/results (`<id>.h5`, else `<id>.h5.partial`), sorted by id, each read once
// (run_reader.hpp: one guarded child, the folder's index). Unreadable ones and job ids listed in
// RUN_DIR/jobs/*.json without any results file are in `skipped` as "<path>: <reason>" and left out
// of `records`; `data` holds each record's JobData to the depth asked, in the same order.
struct ScannedRun {
  std::vector<JobRecord> records;
  std::vector<JobData> data;
  std::vector<std::string> skipped;
};
ScannedRun scan_results(const std::string& run_dir, Depth depth);
// The records only (Depth::Summary).
std::vector<JobRecord> scan_run_dir(const std::string& run_dir, std::vector<std::string>& skipped);

// Reads the /jobs table of a results.h5 written by collect(), once, in a forked copy (a damaged
// index that crashes libhdf5 is a "damaged" error, a read that hangs past `timeout_s` too). Throws
// std::runtime_error naming the file.
std::vector<JobRecord> read_index(const std::string& results_h5,
                                  double timeout_s = ReadOptions{}.isolate_timeout_s);

struct CollectOptions {
  std::string run_dir;
  bool quiet = false;  // no progress lines on `log`
};

struct CollectResult {
  std::string index_path;
  std::size_t jobs = 0;
  std::vector<std::string> skipped;  // "<path>: <reason>"
};

// Writes RUN_DIR/results.h5 atomically (temporary file + rename); running it again rebuilds it.
// Skipped files are named on `log`. Throws std::invalid_argument if RUN_DIR has no results/ folder.
CollectResult collect(const CollectOptions& opts, std::ostream& log);

}  // namespace gridrun::results
