// load_run: a run directory or a results.h5 into the loaded-run model (run_model.hpp), every job
// file read once, to the depth asked.
#include "gridrun/report/run_model.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/report/collect.hpp"
#include "gridrun/run/failure.hpp"
#include "gridrun/run/prediction.hpp"
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

namespace {

// The ids and compare-by key of the run's current grid (its grid.yaml copy, which `gridrun run`
// and `gridrun submit` rewrite when the grid changes); nullopt when there is none or it no longer
// loads (then nothing is left out).
struct CurrentGrid {
  std::set<std::string> ids;
  std::string compare_by;
  std::vector<std::string> overrides;  // the `--set` the grid was last planned with
};
// `state`: the run's state.json, read once by load_run for this and the phases (a 100,000-job
// state is 30 MB of JSON). The ids come from a streamed expansion: no Job is kept per id.
std::optional<CurrentGrid> current_grid(const run::RunDir& rd, const run::RunState& state,
                                        std::ostream& log) {
  std::error_code ec;
  if (!fs::is_regular_file(rd.grid_copy(), ec)) return std::nullopt;
  try {
    jobs::LoadOptions lo;
    lo.base_dir = state.grid_dir;  // relative model_file/data_file paths start there
    // The `--set` the run was last planned with: the same ids as that run.
    lo.overrides = jobs::parse_overrides(state.overrides);
    lo.repeats = state.repeats;
    CurrentGrid g;
    lo.on_job = [&](std::size_t, const std::string& id, const std::vector<jobs::Value>&) {
      g.ids.insert(id);
    };
    const jobs::Expansion ex = jobs::load_grid(rd.grid_copy(), lo, base::kinds::kGridCopy);
    g.compare_by = ex.compare_by;
    g.overrides = state.overrides;
    return g;
  } catch (const std::exception& e) {
    log << "report: " << rd.grid_copy() << " does not load (" << base::printable_line(e.what())
        << "); reporting every job of the run directory\n";
    return std::nullopt;
  }
}

// state.json, read once (the current grid's overrides and the recorded phases), and the current
// grid. A damaged state costs those only (the next `gridrun run` quarantines it).
struct CurrentFacts {
  std::optional<run::RunState> state;
  std::string state_problem;
  std::optional<CurrentGrid> grid;
};
CurrentFacts current_facts(const run::RunDir& rd, std::ostream& log) {
  CurrentFacts f;
  try {
    f.state = rd.load_state(/*with_jobs=*/false);  // its phases and `--set` only
  } catch (const std::exception& e) {
    f.state_problem = base::printable_line(e.what());
  }
  std::error_code ec;
  if (f.state)
    f.grid = current_grid(rd, *f.state, log);
  else if (fs::is_regular_file(rd.grid_copy(), ec))
    log << "report: " << rd.grid_copy() << " does not load (" << f.state_problem
        << "); reporting every job of the run directory\n";
  return f;
}

// The id in a skipped line "<dir>/<id>.h5[.partial]: why".
std::string skipped_id(const std::string& line) {
  const std::string path = line.substr(0, line.find(": "));
  std::string name = fs::path(path).filename().string();
  return name.substr(0, name.find('.'));
}

}  // namespace

LoadedRun load_run(const std::string& input, std::ostream& log, const LoadOptions& opts) {
  const Depth depth = opts.depth;
  const fs::path in = input;
  LoadedRun run;
  std::vector<std::string> skipped;
  if (fs::is_directory(in)) {
    if (!fs::is_directory(run::RunDir(input).results_dir()))
      throw std::invalid_argument(input + ": not a run directory (no results/ folder)");
    FolderReadOptions fo;
    fo.depth = depth;
    fo.whole_when_read = opts.whole_when_read;
    const bool given =
        opts.scanned && opts.scanned->depth == depth && opts.scanned->whole_when_read == opts.whole_when_read;
    ScannedRun scanned = given ? std::move(*opts.scanned) : scan_results(input, fo);
    skipped = std::move(scanned.skipped);
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
    fo.whole_when_read = opts.whole_when_read;
    for (auto& r : results::read_job_files(run::RunDir(run.run_dir).results_dir(), names, fo)) {
      if (r.ok)
        run.data.push_back(std::move(r.data));
      else if (depth == Depth::Full)
        skipped.push_back(r.error);
    }
  } else {
    throw std::invalid_argument(input + ": no such run directory or results.h5");
  }
  const run::RunDir rd(run.run_dir);
  // A failed job's reason in one line, from its log when its results file recorded none.
  for (auto& j : run.jobs)
    if (j.status == "failed") j.exit_reason = run::failure_reason(rd, j.id, j.exit_reason);
  CurrentFacts facts = current_facts(rd, log);
  const std::optional<CurrentGrid>& grid = facts.grid;
  if (grid) {
    run.compare_by = grid->compare_by;
    // A run that `gridrun submit` made is measured again through Slurm, not on this machine.
    const bool slurm = fs::exists(rd.submitted_file());
    run.rerun_prefix =
        std::string(slurm ? "gridrun submit " : "gridrun run ") + rd.grid_copy() + (slurm ? " --slurm" : "") +
        " --out " +
        (fs::path(rd.root()).parent_path().empty() ? std::string(".")
                                                   : fs::path(rd.root()).parent_path().string());
    for (const auto& o : grid->overrides) run.rerun_prefix += " --set " + o;
  }
  // Jobs of earlier grids in the same run directory (a changed parameter, a removed value) are not
  // part of what the current grid asks; they stay in the files and in results.h5.
  if (grid && !opts.all) {
    auto current = [&](const std::string& id) { return grid->ids.count(id) > 0; };
    const std::size_t before = run.jobs.size();
    run.jobs.erase(
        std::remove_if(run.jobs.begin(), run.jobs.end(), [&](const auto& r) { return !current(r.id); }),
        run.jobs.end());
    run.left_out = before - run.jobs.size();
    run.data.erase(
        std::remove_if(run.data.begin(), run.data.end(), [&](const auto& d) { return !current(d.id); }),
        run.data.end());
    skipped.erase(std::remove_if(skipped.begin(), skipped.end(),
                                 [&](const auto& l) { return !current(skipped_id(l)); }),
                  skipped.end());
  }
  for (const auto& s : skipped) log << "report: skipped " << s << "\n";
  std::vector<const JobData*> read;
  for (const auto& d : run.data) read.push_back(&d);
  PhaseInput phases;
  phases.compare_by = run.compare_by;
  if (!grid || !grid->compare_by.empty()) {
    if (facts.state)
      phases.recorded = std::move(facts.state->phases);
    else
      log << "report: ignoring " << facts.state_problem << "\n";
  }
  // A phase recorded for an earlier grid of this run directory (a repeat or a value the grid no
  // longer has) is not the current grid's either: without this it showed as a phase of 0 jobs.
  if (grid && !opts.all)
    for (auto it = phases.recorded.begin(); it != phases.recorded.end();) {
      const auto& ids = it->second.jobs;
      const bool now =
          std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return grid->ids.count(id) > 0; });
      it = now ? std::next(it) : phases.recorded.erase(it);
    }
  // What Slurm tasks recorded of the other jobs on their nodes (logs/<id>.others; local runs have none).
  if (!grid || !grid->compare_by.empty()) {
    std::vector<std::string> ids;
    for (const JobData* d : read) ids.push_back(d->id);
    phases.slurm_others = read_slurm_others(rd, ids);
  }
  run.phases = complete_phases(phases, read);
  // A calibrated prediction made before the run (run/prediction.hpp); one from the cost model
  // alone is not worth printing beside a measurement.
  std::error_code ec;
  if (fs::is_regular_file(rd.prediction_file(), ec)) {
    try {
      const run::Prediction pred = run::read_prediction(rd.prediction_file());
      for (const auto& w : pred.warnings) log << "report: ignoring " << w << "\n";
      if (pred.source.rfind("calibration", 0) == 0)
        for (auto& p : run.phases)
          if (const auto it = pred.phases.find(p.name); it != pred.phases.end()) {
            p.predicted_makespan_s = it->second.makespan_s;
            p.calibration_other_cpu_share = pred.calibration_other_cpu_share;
          }
    } catch (const std::exception& e) {
      log << "report: ignoring " << base::printable_line(e.what()) << "\n";
    }
  }
  return run;
}

std::vector<JobData> read_whole_jobs(const LoadedRun& run,
                                     const std::vector<const results::JobRecord*>& records) {
  std::vector<JobData> out(records.size());
  // What load_run read whole already (FolderReadOptions::whole_when_read) is copied, not read again:
  // one pass over the loaded jobs for the few asked (not a map of every loaded job).
  std::map<std::string, const JobData*> have;
  for (const results::JobRecord* r : records) have.emplace(r->id, nullptr);
  for (const auto& d : run.data)
    if (d.depth == Depth::Full)
      if (const auto it = have.find(d.id); it != have.end()) it->second = &d;
  // The rest in one read per folder (a run's records all name results/<id>.h5).
  std::map<std::string, std::vector<std::size_t>> by_folder;
  for (std::size_t k = 0; k < records.size(); ++k) {
    if (const JobData* whole = have.at(records[k]->id)) {
      out[k] = *whole;
      continue;
    }
    by_folder[(fs::path(run.run_dir) / records[k]->file).parent_path().string()].push_back(k);
  }
  FolderReadOptions fo;
  fo.depth = Depth::Full;
  for (const auto& [folder, ks] : by_folder) {
    std::vector<std::string> names;
    for (const std::size_t k : ks) names.push_back(fs::path(records[k]->file).filename().string());
    std::vector<results::JobFileRead> got = results::read_job_files(folder, names, fo);
    for (std::size_t q = 0; q < ks.size(); ++q)
      if (got[q].ok) out[ks[q]] = std::move(got[q].data);
  }
  return out;
}

}  // namespace gridrun::report
