// The run index file RUN_DIR/results.h5 (written by `gridrun collect`, report/collect.hpp).
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
// The same, taking what it keeps from `job` (a caller that needs the records only: collect).
JobRecord record_of(JobData&& job, const std::string& relative_file);

// Reads the /jobs table of a results.h5 written by collect(), once, in a forked copy (a damaged
// index that crashes libhdf5 is a "damaged" error, a read that hangs past `timeout_s` too). Throws
// std::runtime_error naming the file.
std::vector<JobRecord> read_index(const std::string& results_h5,
                                  double timeout_s = ReadOptions{}.isolate_timeout_s);

// Writes `path` (RUN_DIR/results.h5) from `jobs` atomically (temporary file + rename); `run_dir` names
// the run and anchors the records' relative file links. Throws std::runtime_error naming the file.
void write_run_index(const std::string& path, const std::string& run_dir, const std::vector<JobRecord>& jobs);

}  // namespace gridrun::results
