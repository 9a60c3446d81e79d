// `gridrun collect` and the scan of a run's job files (collect.hpp).
#include "gridrun/report/collect.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::report {

namespace fs = std::filesystem;
using results::Depth;
using results::FolderReadOptions;
using results::JobRecord;

ScannedRun scan_results(const std::string& run_dir, FolderReadOptions fo, bool keep_data) {
  ScannedRun out;
  out.depth = fo.depth;
  out.whole_when_read = fo.whole_when_read;
  const run::RunDir rd(run_dir);
  const std::string results = rd.results_dir();
  // The records name their files relative to the run directory (results.h5 links them so).
  const fs::path relative = fs::path(results).lexically_relative(rd.root());
  const std::vector<std::string> names = results::list_job_files(results);
  // Their ids, sorted (list_job_files gives them in id order; sorted again all the same).
  std::vector<std::string> have;
  have.reserve(names.size());
  for (const auto& n : names) have.push_back(run::RunDir::job_id_of_results_file(n).value_or(n));
  if (!std::is_sorted(have.begin(), have.end())) std::sort(have.begin(), have.end());
  // Jobs planned in jobs/*.json but without any results file: named, not fatal (one listing).
  if (auto listed = base::list_folder(rd.jobs_dir())) {
    std::vector<std::string> missing;
    for (const std::string& name : *listed) {
      const std::optional<std::string> id = run::RunDir::job_id_of_job_file(name);
      if (id && !std::binary_search(have.begin(), have.end(), *id))
        missing.push_back(rd.result_file(*id) + ": missing (job has no results file)");
    }
    std::sort(missing.begin(), missing.end());
    out.skipped = std::move(missing);
  }
  fo.prune_index = true;
  std::vector<results::JobFileRead> read = results::read_job_files(results, names, fo);
  out.records.reserve(read.size());
  if (keep_data) out.data.reserve(read.size());
  for (auto& r : read) {
    if (!r.ok) {
      out.skipped.push_back(r.error);
      continue;
    }
    if (!keep_data) {
      out.records.push_back(results::record_of(std::move(r.data), (relative / r.name).string()));
      continue;
    }
    out.records.push_back(results::record_of(r.data, (relative / r.name).string()));
    out.data.push_back(std::move(r.data));
  }
  return out;
}

std::vector<JobRecord> scan_run_dir(const std::string& run_dir, std::vector<std::string>& skipped) {
  FolderReadOptions fo;
  fo.depth = Depth::Summary;
  ScannedRun s = scan_results(run_dir, fo, false);
  skipped.insert(skipped.end(), s.skipped.begin(), s.skipped.end());
  return std::move(s.records);
}

CollectResult collect(const CollectOptions& opts, std::ostream& log) {
  const run::RunDir rd(opts.run_dir);
  if (!fs::is_directory(rd.results_dir()))
    throw std::invalid_argument(opts.run_dir + ": not a run directory (no results/ folder)");
  CollectResult res;
  res.index_path = rd.index_file();
  std::vector<JobRecord> own;
  if (opts.scanned)
    res.skipped = opts.scanned->skipped;
  else
    own = scan_run_dir(opts.run_dir, res.skipped);
  const std::vector<JobRecord>& jobs = opts.scanned ? opts.scanned->records : own;
  for (const auto& s : res.skipped) log << "collect: skipped " << s << "\n";
  results::write_run_index(res.index_path, opts.run_dir, jobs);
  res.jobs = jobs.size();
  if (!opts.quiet)
    log << "collect: indexed " << res.jobs << " job(s) into " << res.index_path
        << (res.skipped.empty() ? "" : " (" + std::to_string(res.skipped.size()) + " skipped)") << "\n";
  return res;
}

}  // namespace gridrun::report
