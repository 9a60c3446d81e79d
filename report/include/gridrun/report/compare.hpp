// `gridrun report RUN_A RUN_B ...`: the same configurations side by side across runs (the same grid
// on two machines, or with two builds), with each run's figures and its ratios to the first run.
//
// Why jobs are matched by id: a job id is the hash of the job's parameters (docs/grid.md, "Job
// identity"), nothing of the machine, the build or the output folder, so the same grid run
// anywhere gives the same ids, and one id in two runs is one configuration measured twice. A grid
// changed between the runs (another value), or a build with another default, gives other ids for
// the jobs it touched; those are counted as configurations of one run only.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/base/table.hpp"
#include "gridrun/report/run_model.hpp"
#include "gridrun/report/tables.hpp"
#include "gridrun/results/run_index.hpp"

namespace gridrun::report {

// One configuration across the runs: jobs[k] is its record in run k, or null where run k has none.
struct MatchedConfig {
  std::string id;
  std::vector<const results::JobRecord*> jobs;
};

struct RunMatch {
  std::vector<MatchedConfig> rows;             // ids in at least two runs, in id order
  std::vector<std::vector<std::string>> only;  // per run: its ids that no other run has, sorted
};

// Matches the runs' records by job id. A run that lists an id twice (it should not) counts its
// first record. The records must outlive the result (it points into them).
RunMatch match_runs(const std::vector<std::vector<results::JobRecord>>& runs);

// The name of run k in column headers: "A".."Z", then "R27", "R28", ...
std::string run_label(std::size_t k);

// The comparison of loaded runs (two or more): a "Runs" table (label, folder, jobs, and the
// hostname, cpu_model and torch_version of the job files where they differ between runs), then
// one row per configuration in at least two runs (the parameters that differ between the rows,
// then per run samples/s, step p50, final test accuracy and status, and each run's samples/s and
// p50 ratios to the first), with a note counting the configurations of one run only. opts.filters
// select jobs in every run; opts.format and opts.width render. Bad filters throw
// std::invalid_argument naming the flag.
std::vector<base::Table> compare_tables(const std::vector<LoadedRun>& runs, const ReportOptions& opts);

// Loads each of `inputs` (run directories or results.h5 files, each job file read once, at the
// depth of the text report; opts.all as for one run), then renders compare_tables to `out`;
// skipped files and notes go to `log`. Throws std::invalid_argument for fewer than two inputs or
// an input that is no run.
void write_comparison(const std::vector<std::string>& inputs, const ReportOptions& opts, std::ostream& out,
                      std::ostream& log);

}  // namespace gridrun::report
