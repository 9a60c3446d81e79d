// load_run: a run directory or a results.h5 into the loaded-run model (run_model.hpp), every job
// file read once, to the depth asked.
#include "gridrun/report/run_model.hpp"

#include <filesystem>
#include <stdexcept>

#include "gridrun/base/text.hpp"
#include "gridrun/report/collect.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::report {

namespace fs = std::filesystem;
using results::Depth;
using results::FolderReadOptions;
using results::JobData;

std::map<std::string, const JobData*> LoadedRun::data_by_id() const {
  std::map<std::string, const JobData*> out;
  for (const auto& d : data) out[d.id] = &d;
  return out;
}

LoadedRun load_run(const std::string& input, std::ostream& log, Depth depth) {
  const fs::path in = input;
  LoadedRun run;
  if (fs::is_directory(in)) {
    if (!fs::is_directory(run::RunDir(input).results_dir()))
      throw std::invalid_argument(input + ": not a run directory (no results/ folder)");
    ScannedRun scanned = scan_results(input, depth);
    for (const auto& s : scanned.skipped) log << "report: skipped " << s << "\n";
    run.jobs = std::move(scanned.records);
    run.data = std::move(scanned.data);
    run.run_dir = in.string();
  } else if (fs::is_regular_file(in)) {
    run.jobs = results::read_index(input);
    // A results.h5 lies in its run directory (RunDir::index_file).
    run.run_dir = in.parent_path().empty() ? std::string(".") : in.parent_path().string();
    // The files behind the records, in one read of their folder (and through its index). The
    // index's own columns make the tables; the files complete the phases and, at Depth::Full, give
    // the HTML and profile reports their rows, which is when an unreadable one is worth a line.
    std::vector<std::string> names;
    for (const auto& r : run.jobs) names.push_back(fs::path(r.file).filename().string());
    FolderReadOptions fo;
    fo.depth = depth;
    for (auto& r : results::read_job_files(run::RunDir(run.run_dir).results_dir(), names, fo)) {
      if (r.ok)
        run.data.push_back(std::move(r.data));
      else if (depth == Depth::Full)
        log << "report: skipped " << r.error << "\n";
    }
  } else {
    throw std::invalid_argument(input + ": no such run directory or results.h5");
  }
  std::vector<const JobData*> read;
  for (const auto& d : run.data) read.push_back(&d);
  std::map<std::string, run::PhaseRecord> recorded;
  try {
    recorded = run::RunDir(run.run_dir).load_state().phases;
  } catch (const std::exception& e) {
    // A damaged state.json costs the recorded phases only (the next `gridrun run` quarantines it).
    log << "report: ignoring " << base::printable_line(e.what()) << "\n";
  }
  run.phases = complete_phases(recorded, read);
  return run;
}

}  // namespace gridrun::report
