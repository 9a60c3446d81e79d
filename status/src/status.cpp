// `gridrun status`: the merge of state.json, job files, an optional batch-system overlay and the
// results files, and its table/json/csv output. See status.hpp.
#include "gridrun/status/status.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "gridrun/base/json.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/failure.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/run/progress.hpp"

namespace fs = std::filesystem;

namespace gridrun::status {

namespace {

// Files gridrun (or gridrun-train) renamed *.damaged instead of trusting them.
std::vector<std::string> damaged_files(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->path().filename().string().find(".damaged") != std::string::npos)
      out.push_back(fs::relative(it->path(), root, ec).string());
  std::sort(out.begin(), out.end());
  return out;
}

// What the results folder says of a job: the glance of its file (`<id>.h5`, else the live
// `<id>.h5.partial`, whose status shows as "partial"), and for a live file its progress.
struct DiskGlance {
  std::string status, exit_reason;
  std::vector<results::Attempt> attempts;
  // Live files only: the /steps columns step and wall_s, the last row's epoch, steps_per_epoch.
  std::vector<double> steps, wall_s;
  std::int64_t epoch = -1, steps_per_epoch = 0;
};

DiskGlance glance_of(const results::JobData& d) {
  DiskGlance g;
  g.status = d.status;
  g.exit_reason = d.exit_reason;
  g.attempts = d.attempts;
  return g;
}

void keep_progress(DiskGlance& g, const results::JobData& d) {
  if (const auto* s = d.steps.column("step")) g.steps = *s;
  if (const auto* w = d.steps.column("wall_s")) g.wall_s = *w;
  if (const auto* e = d.steps.column("epoch"); e && !e->empty()) g.epoch = std::llround(e->back());
  const double spe = d.attr_number("steps_per_epoch", std::nan(""));
  if (std::isfinite(spe) && spe > 0) g.steps_per_epoch = std::llround(spe);
}

// Every job's file read once through the results folder's index: a finished run reads no job file
// at all, a run where k files changed reads those k (run_reader.hpp). Finished files at glance
// depth; live `.partial` files (never indexed, so always read whole anyway) with their tables, for
// the progress of running jobs.
std::map<std::string, DiskGlance> glance_results(const run::RunDir& dir) {
  std::map<std::string, DiskGlance> out;
  const std::string folder = dir.results_dir();
  results::FolderReadOptions glance, full;
  glance.depth = results::Depth::Glance;
  full.depth = results::Depth::Full;
  results::ResultsFolder rf(folder);
  std::vector<std::string> finals, partials;
  for (auto& name : results::list_job_files(folder))
    (run::RunDir::is_partial_file(name) ? partials : finals).push_back(std::move(name));
  for (const auto& r : rf.read(finals, glance)) {
    const std::string id = run::RunDir::job_id_of_results_file(r.name).value_or(r.name);
    if (!r.ok) {
      // An unreadable final file with a live .partial beside it: the .partial tells the state.
      std::error_code ec;
      if (fs::exists(dir.partial_file(id), ec)) partials.push_back(run::RunDir::partial_file_name(id));
      continue;
    }
    out[id] = glance_of(r.data);
  }
  for (const auto& r : rf.read(partials, full)) {
    if (!r.ok) continue;
    DiskGlance& g = out[run::RunDir::job_id_of_results_file(r.name).value_or(r.name)];
    g.status = "partial";
    g.exit_reason = r.data.exit_reason;
    g.attempts = r.data.attempts;
    keep_progress(g, r.data);
  }
  return out;
}

// What the job's results file says of it: its status on disk and the hosts of its attempts (where
// state.json names no host, the last of them). Also what patch_status takes again.
void take_glance(JobStatusRow& row, const DiskGlance* glance) {
  row.disk = glance ? glance->status : std::string();
  row.attempt_hosts.clear();
  if (glance)
    for (const auto& a : glance->attempts)
      row.attempt_hosts.push_back(a.hostnames.empty() ? a.hostname : a.hostnames);
  row.node = row.recorded_host;
  if (row.node.empty() && !row.attempt_hosts.empty()) row.node = row.attempt_hosts.back();
  row.attempts = std::max(row.recorded_attempts, static_cast<int>(row.attempt_hosts.size()));
}

JobStatusRow row_from_record(const run::JobRecord& r, const DiskGlance* glance) {
  JobStatusRow row;
  row.id = r.id;
  row.state = row.recorded_state = r.state;
  row.recorded_attempts = r.attempts;
  row.recorded_host = r.host;
  row.slurm_id = r.slurm_job_id;
  if (!r.exit_codes.empty()) row.exit_code = r.exit_codes.back();
  // Local runs: timings from state.json; a running job's up to now.
  if (r.start_unix > 0 && r.end_unix > r.start_unix)
    row.elapsed_s = r.end_unix - r.start_unix;
  else if (r.start_unix > 0 && r.state == run::JobOutcome::Running)
    row.elapsed_s = std::max(0.0, base::unix_now() - r.start_unix);
  if (std::isfinite(row.elapsed_s)) {
    const auto sec = std::llround(row.elapsed_s);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", sec / 3600, sec / 60 % 60, sec % 60);
    row.elapsed = buf;
  }
  take_glance(row, glance);
  return row;
}

// The results file is the final word on how a job ended.
void settle_with_results(JobStatusRow& row) {
  const run::JobOutcome disk = run::outcome_from_results(row.disk);
  // Finished, failed or diverged on disk (a failed or diverged file of a job Slurm holds again is
  // an earlier attempt's): the file's word.
  if (run::is_finished(disk) || (run::is_failure(disk) && !run::is_queued(row.state)))
    row.state = disk;
  else if (!row.slurm_state.empty() && row.state == run::JobOutcome::Completed)
    row.state = disk == run::JobOutcome::Interrupted ? run::JobOutcome::Interrupted : run::JobOutcome::Failed;
}

// The command that resumes the run in `root` as it was last run: its grid file (an older state.json
// has none: then a placeholder naming the grid's folder), --out the run's parent folder, and its
// --set and --repeats (without them the jobs' ids would differ).
std::string resume_command_of(const std::string& root, const run::RunState& state) {
  const fs::path dir = fs::path(root).lexically_normal();
  const std::string parent = dir.has_parent_path() ? dir.parent_path().string() : ".";
  std::string cmd = "gridrun run ";
  cmd += state.grid_file.empty()
             ? "GRID_FILE" + (state.grid_dir.empty() ? std::string() : " (in " + state.grid_dir + ")")
             : base::shell_quote(state.grid_file);
  cmd += " --out " + base::shell_quote(parent.empty() ? "." : parent);
  for (const auto& o : state.overrides) cmd += " --set " + base::shell_quote(o);
  if (state.repeats > 0) cmd += " --repeats " + std::to_string(state.repeats);
  return cmd;
}

// Jobs state.json calls finished (a hand edit, a copy of state.json alone, a results folder
// deleted) without a results file are not done (issue 57: a folder holding only state.json was
// listed "4 done"): shown pending, "missing" in the results column, with one warning naming them;
// `gridrun run` runs them again. A results file that is there but unreadable is the readers' to name.
void flag_missing_results(const run::RunDir& dir, const std::map<std::string, DiskGlance>& disk,
                          RunStatus& st) {
  std::vector<std::string> missing;
  for (auto& row : st.jobs) {
    if (!run::is_finished(row.state) || disk.count(row.id)) continue;
    std::error_code ec;
    if (fs::symlink_status(dir.result_file(row.id), ec).type() != fs::file_type::not_found) continue;
    row.state = run::JobOutcome::Pending;
    row.disk = "missing";
    missing.push_back(row.id);
  }
  if (missing.empty()) return;
  std::string names;
  for (std::size_t k = 0; k < missing.size() && k < 3; ++k)
    names += (k ? ", " : "") + run::RunDir::result_file_name(missing[k]);
  if (missing.size() > 3) names += ", ... " + std::to_string(missing.size() - 3) + " more";
  st.warnings.push_back(dir.state_file() + ": " + std::to_string(missing.size()) +
                        " job(s) recorded as finished have no results file in " + dir.results_dir() + " (" +
                        names + "): not counted as done; `gridrun run` runs them again");
}

// Every row's parameters: from the run's grid.yaml copy with the run's `--set` overrides (loaded
// from the folder of the grid it was copied from, as `gridrun plan` would), else, for a job the copy no
// longer expands to (an older grid of the same run) or when the copy does not load, from the job's file. A
// job with neither has the defaults (it then differs where others set a value).
// A row the copy does not expand to is marked `earlier` (only when the copy loaded: otherwise
// nothing is known of the current grid).
std::vector<jobs::JobParams> job_params(const run::RunDir& dir, const run::RunState& state,
                                        std::vector<JobStatusRow>& rows) {
  std::unordered_map<std::string, jobs::JobParams> by_id;
  bool grid_known = false;
  std::error_code ec;
  if (fs::exists(dir.grid_copy(), ec)) {
    try {
      jobs::LoadOptions lo;
      lo.base_dir = state.grid_dir;
      lo.allow_empty = true;
      // As the run resolved them: its `--set` values are part of every job's parameters (and id).
      lo.overrides = jobs::parse_overrides(state.overrides, "--set");
      lo.repeats = state.repeats;
      jobs::Expansion ex = jobs::load_grid(dir.grid_copy(), lo, base::kinds::kGridCopy);
      by_id.reserve(ex.jobs.size());
      for (auto& j : ex.jobs) by_id.emplace(std::move(j.id), std::move(j.params));
      grid_known = true;
    } catch (const std::exception&) {
      // The job files below have every job's parameters too.
    }
  }
  std::vector<jobs::JobParams> out;
  out.reserve(rows.size());
  for (auto& row : rows) {
    // Moved out: the rows' ids are distinct (one row per record of a map by id).
    auto it = by_id.find(row.id);
    if (it != by_id.end()) {
      out.push_back(std::move(it->second));
      continue;
    }
    row.earlier = grid_known;
    try {
      out.push_back(jobs::read_job_file(dir.job_file(row.id)).params);
    } catch (const std::exception&) {
      out.emplace_back();
    }
  }
  return out;
}

// Jobs of an earlier grid or selection that never started leave the rows (and so every count):
// the current grid does not hold them, so no `gridrun run` will start them, and listing them as
// pending (with the defaults for parameters, having no job file) described a grid that is gone
// (issue 58). Those that ran stay, with their own parameters, marked; one line says both.
void hide_earlier_pending(RunStatus& st, std::vector<jobs::JobParams>& params) {
  std::size_t keep = 0, shown = 0;
  for (std::size_t i = 0; i < st.jobs.size(); ++i) {
    if (st.jobs[i].earlier && st.jobs[i].state == run::JobOutcome::Pending) {
      ++st.earlier_hidden;
      continue;
    }
    shown += st.jobs[i].earlier ? 1 : 0;
    if (keep != i) {
      st.jobs[keep] = std::move(st.jobs[i]);
      params[keep] = std::move(params[i]);
    }
    ++keep;
  }
  st.jobs.resize(keep);
  params.resize(keep);
  if (shown > 0)
    st.notes.push_back(
        std::to_string(shown) +
        " job(s) of an earlier grid or --set, shown with their own parameters, marked (earlier)");
  if (st.earlier_hidden > 0)
    st.notes.push_back(
        std::to_string(st.earlier_hidden) +
        " job(s) of an earlier grid or --set never started and will not run: not shown or counted");
}

// Step, epoch and ETA of a job whose results file is live (running, or left by an interrupted
// attempt: its progress so far), and of its progress file (run/progress.hpp), which rank 0
// rewrites every second: the results file is flushed only at epoch ends and every 30 s, so the
// file alone lagged (issue 49). The ETA of a job that is not running is not shown.
void add_progress(JobStatusRow& row, const jobs::JobParams& p, const DiskGlance* g,
                  const std::optional<run::Progress>& live, const run::Prediction* prediction) {
  const bool running = row.state == run::JobOutcome::Running;
  // The rows are read where they are (a live file may hold thousands), not copied per job.
  static const std::vector<double> kNoRows;
  const std::vector<double>& steps = g ? g->steps : kNoRows;
  const std::vector<double>& wall_s = g ? g->wall_s : kNoRows;
  const std::int64_t resumed = g && !g->attempts.empty() ? g->attempts.back().resumed_from_step : 0;
  if (!steps.empty()) {
    row.step = std::llround(steps.back());
    row.epoch = g->epoch;
    row.total_steps = planned_steps(p.max_steps, p.epochs, g->steps_per_epoch);
    row.epochs = p.epochs;
  }
  if (live && live->step > row.step) {
    row.step = live->step;
    if (live->epoch > 0) row.epoch = live->epoch;
    if (live->total_steps > 0) row.total_steps = live->total_steps;
    if (live->epochs > 0) row.epochs = live->epochs;
    if (running && row.total_steps > 0) {
      // The rate of this attempt: from where it started (the last row at or before the step it
      // resumed from, else step 0 at wall time 0; the progress file's wall time is the rows').
      double base_step = 0, base_wall = 0;
      for (std::size_t k = 0; k < std::min(steps.size(), wall_s.size()); ++k)
        if (steps[k] <= static_cast<double>(resumed)) base_step = steps[k], base_wall = wall_s[k];
      const double ds = static_cast<double>(live->step) - base_step, dt = live->wall_s - base_wall;
      if (ds > 0 && dt > 0) {
        row.eta_s = static_cast<double>(std::max<std::int64_t>(row.total_steps - live->step, 0)) * dt / ds;
        row.eta_source = "progress";
      }
    }
  }
  if (running && row.eta_source.empty() && !steps.empty()) {
    row.eta_s = progress_eta_s(steps, wall_s, row.total_steps, resumed);
    if (std::isfinite(row.eta_s)) row.eta_source = "progress";
  }
  if (!running || !prediction) return;
  auto it = prediction->job_seconds.find(row.id);
  if (it == prediction->job_seconds.end()) return;
  row.predicted_eta_s = predicted_eta_s(it->second, row.elapsed_s);
  if (row.eta_source.empty() && std::isfinite(row.predicted_eta_s)) {
    row.eta_s = row.predicted_eta_s;
    row.eta_source = "prediction";
  }
}

}  // namespace

double progress_eta_s(const std::vector<double>& steps, const std::vector<double>& wall_s,
                      std::int64_t total_steps, std::int64_t resumed_from_step) {
  const double nan = std::nan("");
  if (total_steps <= 0) return nan;
  const std::size_t n = std::min(steps.size(), wall_s.size());
  // The first row of the current attempt (rows are in step order; a resumed attempt goes on
  // after its checkpoint's step).
  std::size_t first = 0;
  while (first < n && steps[first] <= static_cast<double>(resumed_from_step)) ++first;
  if (n == 0) return nan;
  const double last_step = steps[n - 1];
  if (last_step >= static_cast<double>(total_steps)) return 0;
  if (n - first < 2) return nan;
  const double ds = last_step - steps[first], dt = wall_s[n - 1] - wall_s[first];
  if (!(ds > 0) || !(dt > 0)) return nan;
  return (static_cast<double>(total_steps) - last_step) * dt / ds;
}

std::int64_t planned_steps(std::int64_t max_steps, std::int64_t epochs, std::int64_t steps_per_epoch) {
  const std::int64_t by_epochs = epochs > 0 && steps_per_epoch > 0 ? epochs * steps_per_epoch : -1;
  if (max_steps > 0 && by_epochs > 0) return std::min(max_steps, by_epochs);
  if (max_steps > 0) return max_steps;
  return by_epochs;
}

double predicted_eta_s(double predicted_job_s, double elapsed_s) {
  if (!std::isfinite(predicted_job_s) || !std::isfinite(elapsed_s)) return std::nan("");
  return std::max(0.0, predicted_job_s - elapsed_s);
}

RunStatus run_status(const run::RunDir& dir, const StatusOverlay& overlay) {
  const std::string& root = dir.root();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument("RUN_DIR: '" + root + "' is not a directory");
  if (!dir.holds_run())
    throw std::invalid_argument("RUN_DIR: '" + root +
                                "' has no state.json and no jobs/ (not a run directory)");
  RunStatus st;
  st.run_dir = root;
  st.damaged = damaged_files(root);
  run::RunState state;
  try {
    state = dir.load_state();
    // Entries left out (an id that is not a job id): shown like a damaged file's, not used.
    for (const std::string& w : state.warnings) st.damaged.push_back(base::printable_line(w));
  } catch (const std::exception& e) {
    // Read-only here: the next `gridrun run` quarantines it; states come from the results files.
    st.damaged.push_back(fs::path(dir.state_file()).filename().string() + " (" +
                         base::printable_line(e.what()) + ")");
  }
  st.name = state.name.empty() ? fs::path(root).filename().string() : state.name;
  // Jobs known from state.json and from job files (a crashed submit may have written only those).
  std::map<std::string, run::JobRecord> recs = std::move(state.jobs);  // state.jobs is not read below
  for (const auto& e : fs::directory_iterator(dir.jobs_dir(), ec)) {
    const std::optional<std::string> id = run::RunDir::job_id_of_job_file(e.path().string());
    if (id && !recs.count(*id)) recs[*id].id = *id;
  }
  // A local run whose lock nobody holds runs nothing: its "running" jobs were cut short (issue 57:
  // after a kill -9 of `gridrun run` they showed running, elapsed counting, for ever). A Slurm job
  // (a slurm_job_id) is the batch system's to say (the overlay). The lock is probed only when a
  // job says running: the probe takes a crashed holder's lock for a moment.
  // Such a run, or one stopped by Ctrl-C, is "interrupted", with the command that resumes it.
  auto local = [](const auto& kv, run::JobOutcome s) {
    return kv.second.state == s && kv.second.slurm_job_id.empty();
  };
  auto cut_short = [&](const auto& kv) {
    return local(kv, run::JobOutcome::Running) || local(kv, run::JobOutcome::Interrupted);
  };
  if (std::any_of(recs.begin(), recs.end(), cut_short) && !run::lock_holder(dir)) {
    for (auto& kv : recs)
      if (local(kv, run::JobOutcome::Running)) kv.second.state = run::JobOutcome::Interrupted;
    st.resume_command = resume_command_of(root, state);
  }
  const std::map<std::string, DiskGlance> disk = glance_results(dir);
  for (const auto& [id, r] : recs) {
    auto it = disk.find(id);
    st.jobs.push_back(row_from_record(r, it == disk.end() ? nullptr : &it->second));
  }
  flag_missing_results(dir, disk, st);
  if (overlay) overlay(st, recs);
  std::vector<jobs::JobParams> params = job_params(dir, state, st.jobs);
  hide_earlier_pending(st, params);
  {
    // Each job's parameters moved in and out, never copied (three copies of 100,000 jobs'
    // parameters were most of a first `status`'s memory at that size).
    std::vector<results::RecordedParams> recorded;
    recorded.reserve(params.size());
    for (auto& p : params) recorded.emplace_back(std::move(p));
    std::vector<const results::RecordedParams*> ptrs;
    ptrs.reserve(recorded.size());
    for (const auto& p : recorded) ptrs.push_back(&p);
    st.varying = results::varying_params(ptrs);
    for (std::size_t i = 0; i < st.jobs.size(); ++i)
      for (const auto& name : st.varying) st.jobs[i].params.push_back(results::param_text(recorded[i], name));
    st.job_params.reserve(recorded.size());
    for (auto& r : recorded) st.job_params.push_back(std::move(*r));
  }
  std::optional<run::Prediction> prediction;
  if (fs::exists(dir.prediction_file(), ec)) {
    try {
      prediction = run::read_prediction(dir.prediction_file());
    } catch (const std::exception&) {
      // Only an estimate: a damaged prediction leaves the ETA to the jobs' own progress.
    }
  }
  st.has_prediction = prediction.has_value();
  for (std::size_t i = 0; i < st.jobs.size(); ++i) {
    auto it = disk.find(st.jobs[i].id);
    // A completed job's file is the whole truth; for every other job (running, interrupted,
    // failed) its progress file says how far it got, also where its results file was read only
    // at a glance (a finished attempt's file) or not flushed yet.
    const std::optional<run::Progress> live = st.jobs[i].state == run::JobOutcome::Completed
                                                  ? std::nullopt
                                                  : run::read_progress(dir.heartbeat_file(st.jobs[i].id));
    add_progress(st.jobs[i], st.job_params[i], it == disk.end() ? nullptr : &it->second, live,
                 prediction ? &*prediction : nullptr);
  }
  for (auto& row : st.jobs) {
    settle_with_results(row);
    st.counts[row.state] += 1;
    if (run::is_failure(row.state)) {
      auto it = disk.find(row.id);
      row.reason = run::failure_reason(dir, row.id, it == disk.end() ? "" : it->second.exit_reason);
    }
  }
  return st;
}

bool patch_status(RunStatus& st, const run::RunDir& dir, const std::vector<std::string>& changed) {
  // Only what the merge takes from a finished results file can change: a live `.partial` beside
  // it (whose progress shows) or a job without a row (of an earlier grid, never started) needs
  // the whole merge.
  std::vector<std::string> names;
  std::vector<std::size_t> rows;
  for (const std::string& name : changed) {
    const std::optional<std::string> id = run::RunDir::job_id_of_results_file(name);
    std::error_code ec;
    if (!id || run::RunDir::is_partial_file(name) ||
        fs::symlink_status(dir.partial_file(*id), ec).type() != fs::file_type::not_found)
      return false;
    const auto it = std::lower_bound(st.jobs.begin(), st.jobs.end(), *id,
                                     [](const JobStatusRow& r, const std::string& v) { return r.id < v; });
    if (it == st.jobs.end() || it->id != *id) return false;
    names.push_back(name);
    rows.push_back(static_cast<std::size_t>(it - st.jobs.begin()));
  }
  // Read without the folder's index: loading an index of 100,000 jobs for 10 files would cost
  // more than the files (the next command that wants them whole reads them into it).
  results::FolderReadOptions glance;
  glance.depth = results::Depth::Glance;
  glance.use_index = false;
  const auto reads = results::read_job_files(dir.results_dir(), names, glance);
  for (std::size_t k = 0; k < reads.size(); ++k) {
    JobStatusRow& row = st.jobs[rows[k]];
    const std::optional<DiskGlance> g =
        reads[k].ok ? std::optional<DiskGlance>(glance_of(reads[k].data)) : std::nullopt;
    take_glance(row, g ? &*g : nullptr);
    row.state = row.recorded_state;
    settle_with_results(row);
    row.reason = run::is_failure(row.state) ? run::failure_reason(dir, row.id, g ? g->exit_reason : "") : "";
  }
  st.counts.clear();
  for (const JobStatusRow& row : st.jobs) st.counts[row.state] += 1;
  return true;
}

namespace {

// The rows are written as they are read, not built as one document: nlohmann's tree of 100,000
// jobs and its dump were most of a second of `status --format json` (issue 60). The head (every
// key but the rows) is still nlohmann's; the rows keep its spelling (NaN as null, invalid UTF-8
// replaced), and one shared writer writes both.
void append_job_json(std::string& out, const RunStatus& st, const JobStatusRow& r) {
  auto key = [&](const char* k) {
    out += ",\"";
    out += k;
    out += "\":";
  };
  auto text = [&](const char* k, const std::string& v) {
    key(k);
    base::append_json_string(out, v);
  };
  // Unknown numbers are null, the integer ones too (a -1 reads as a number to pandas and jq).
  auto known = [&](const char* k, std::int64_t v, std::int64_t from) {
    key(k);
    out += v >= from ? std::to_string(v) : "null";
  };
  auto number = [&](const char* k, double v) {
    key(k);
    base::append_json_double(out, v);
  };
  out += "{\"id\":";
  base::append_json_string(out, r.id);
  out += ",\"params\":{";
  for (std::size_t i = 0; i < st.varying.size() && i < r.params.size(); ++i) {
    if (i) out += ',';
    base::append_json_string(out, st.varying[i]);
    out += ':';
    base::append_json_string(out, r.params[i]);
  }
  out += '}';
  text("state", to_string(r.state));
  text("slurm_id", r.slurm_id);
  text("slurm_state", r.slurm_state);
  known("exit_code", r.exit_code, 0);
  text("elapsed", r.elapsed);
  text("node", r.node);
  key("restarts");
  out += std::to_string(r.restarts);
  key("attempts");
  out += std::to_string(r.attempts);
  key("attempt_hosts");
  out += '[';
  for (std::size_t i = 0; i < r.attempt_hosts.size(); ++i) {
    if (i) out += ',';
    base::append_json_string(out, r.attempt_hosts[i]);
  }
  out += ']';
  text("results", r.disk);
  text("reason", r.reason);
  number("elapsed_s", r.elapsed_s);
  known("step", r.step, 0);
  known("total_steps", r.total_steps, 1);
  known("epoch", r.epoch, 0);
  known("total_epochs", r.epochs, 1);
  number("eta_s", r.eta_s);
  text("eta_source", r.eta_source);
  number("predicted_eta_s", r.predicted_eta_s);
  key("earlier");
  out += r.earlier ? "true" : "false";
  out += '}';
}

void print_json(const RunStatus& st, std::ostream& os) {
  base::Json counts = base::Json::object();
  for (const auto& [s, n] : st.counts) counts[to_string(s)] = n;
  const base::Json head = {{"run", st.name},
                           {"run_dir", st.run_dir},
                           {"slurm_answered", st.slurm_answered},
                           {"collect_id", st.collect_ids.empty() ? "" : st.collect_ids.back()},
                           {"collect_state", st.collect_state},
                           {"counts", std::move(counts)},
                           {"damaged", st.damaged},
                           {"varying", st.varying},
                           {"has_prediction", st.has_prediction},
                           {"warnings", st.warnings},
                           {"notes", st.notes},
                           {"interrupted", !st.resume_command.empty()},
                           {"resume_command", st.resume_command},
                           {"earlier_hidden", st.earlier_hidden}};
  std::string out = head.dump(-1, ' ', false, base::Json::error_handler_t::replace);
  out.pop_back();  // the head's closing brace: the rows come last
  out += ",\"jobs\":[";
  for (std::size_t i = 0; i < st.jobs.size(); ++i) {
    if (i) out += ',';
    append_job_json(out, st, st.jobs[i]);
    if (out.size() > (std::size_t{1} << 20)) {  // bounded memory: written a megabyte at a time
      os.write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
  }
  out += "]}\n";
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

// "123/4000" (or "123" when the end is unknown), "-" before the first row.
std::string of_total(std::int64_t v, std::int64_t total) {
  if (v < 0) return "";
  return std::to_string(v) + (total > 0 ? "/" + std::to_string(total) : "");
}

// Table and CSV go through the shared table writer (base/table.hpp), one job per line.
// For people (`for_people`): an empty word or no exit code shows as "-", and a run no Slurm job
// belongs to (`gridrun run`) leaves out the two Slurm columns, so node and results fit; progress
// and ETA columns are there on every refresh (a watched table keeps its shape). For programs (CSV):
// every column, an unknown field (text, exit code, step, epoch) empty, seconds as plain numbers.
base::Table jobs_table(const RunStatus& st, bool for_people) {
  using base::number_cell;
  using base::text_cell;
  const bool slurm = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(), [](const JobStatusRow& r) {
    return !r.slurm_id.empty() || !r.slurm_state.empty();
  });
  auto word = [&](const std::string& s) { return text_cell(for_people && s.empty() ? "-" : s); };
  auto count = [](double v) { return number_cell(v, 0); };
  base::Table t;
  t.title = "Jobs";
  // The varying parameters right after the id, as `gridrun plan` shows them: what tells jobs apart.
  t.columns = {"id"};
  t.columns.insert(t.columns.end(), st.varying.begin(), st.varying.end());
  t.columns.push_back("state");
  if (slurm) t.columns.insert(t.columns.end(), {"slurm_id", "slurm_state"});
  t.columns.insert(t.columns.end(), {"exit_code", "elapsed", "node", "restarts", "attempts", "results"});
  const bool progress = true, eta = true;
  if (progress) t.columns.insert(t.columns.end(), {"step", "epoch"});
  if (eta) t.columns.push_back(for_people ? "eta" : "eta_s");
  if (!for_people)
    t.columns.insert(t.columns.end(),
                     {"elapsed_s", "total_steps", "total_epochs", "eta_source", "predicted_eta_s"});
  // Where each attempt ran: always for programs; for people only when some job moved.
  const bool moved = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(), [](const JobStatusRow& r) {
    return r.attempt_hosts.size() > 1;
  });
  if (moved) t.columns.push_back("attempt_hosts");
  // Why failed jobs failed: always for programs; for people when a job failed, last and cut to the
  // width the other columns leave (print_table), so that one job stays one line.
  const bool failed = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(),
                                                 [](const JobStatusRow& r) { return !r.reason.empty(); });
  if (failed) {
    t.columns.push_back("reason");
    t.shrink_column = t.columns.size() - 1;
    t.shrink_min = 30;
  }
  for (const auto& r : st.jobs) {
    std::vector<base::Cell> row = {text_cell(r.id)};
    for (std::size_t i = 0; i < st.varying.size(); ++i)
      row.push_back(word(i < r.params.size() ? r.params[i] : ""));
    // A job of an earlier grid says so where its state is read (the warning line explains).
    row.push_back(text_cell(to_string(r.state) + (r.earlier && for_people ? " (earlier)" : "")));
    if (slurm) row.insert(row.end(), {word(r.slurm_id), word(r.slurm_state)});
    const bool no_exit = r.exit_code < 0;
    row.insert(row.end(), {count(no_exit ? std::nan("") : r.exit_code), word(r.elapsed), word(r.node),
                           count(r.restarts), count(r.attempts), word(r.disk)});
    if (progress && for_people)
      row.insert(row.end(), {word(of_total(r.step, r.total_steps)), word(of_total(r.epoch, r.epochs))});
    else if (progress)
      row.insert(row.end(), {count(r.step < 0 ? std::nan("") : static_cast<double>(r.step)),
                             count(r.epoch < 0 ? std::nan("") : static_cast<double>(r.epoch))});
    if (eta && for_people)
      // A prediction's guess is marked "~": the job has not yet shown its own pace.
      row.push_back(word(!std::isfinite(r.eta_s)
                             ? ""
                             : (r.eta_source == "prediction" ? "~" : "") + base::format_duration(r.eta_s)));
    else if (eta)
      row.push_back(number_cell(r.eta_s, 1));
    if (!for_people)
      row.insert(row.end(), {number_cell(r.elapsed_s, 1),
                             count(r.total_steps > 0 ? static_cast<double>(r.total_steps) : std::nan("")),
                             count(r.epochs > 0 ? static_cast<double>(r.epochs) : std::nan("")),
                             text_cell(r.eta_source), number_cell(r.predicted_eta_s, 1)});
    if (moved) {
      std::string hosts;
      for (const auto& h : r.attempt_hosts) hosts += (hosts.empty() ? "" : " > ") + h;
      row.push_back(word(hosts));
    }
    if (failed) row.push_back(word(r.reason));
    t.rows.push_back(std::move(row));
  }
  // Too wide for the terminal: Slurm's own words and the counts go first, then the parameters from
  // the right; id, state, step and the ETA stay.
  std::vector<std::string> order = {"slurm_state", "node",          "results", "restarts", "attempts",
                                    "exit_code",   "attempt_hosts", "elapsed", "epoch",    "slurm_id"};
  order.insert(order.end(), st.varying.rbegin(), st.varying.rend());
  for (const auto& name : order) {
    const auto it = std::find(t.columns.begin() + 1, t.columns.end(), name);
    if (it != t.columns.end()) t.drop_order.push_back(static_cast<std::size_t>(it - t.columns.begin()));
  }
  return t;
}

void print_csv(const RunStatus& st, std::ostream& os) {
  base::TableStyle style;
  style.format = "csv";
  style.heading = false;
  std::vector<base::Table> tables;  // moved in: an initializer list would copy 100,000 rows
  tables.push_back(jobs_table(st, /*for_people=*/false));
  base::render_tables(tables, style, os);
}

void print_table(const RunStatus& st, int width, std::ostream& os) {
  os << "run " << st.name << " (" << st.run_dir
     << "): " << base::counted("job", static_cast<long long>(st.jobs.size()));
  for (const auto& [s, n] : st.counts) os << ", " << n << " " << to_string(s);
  os << "\n";
  if (st.slurm_queried && !st.slurm_answered)
    os << "note: Slurm did not answer; states come from state.json and results files\n";
  for (const auto& d : st.damaged) os << "damaged (quarantined, not used): " << d << "\n";
  for (const auto& w : st.warnings) os << "warning: " << w << "\n";
  for (const auto& n : st.notes) os << "note: " << n << "\n";
  if (!st.resume_command.empty())
    os << "interrupted: no gridrun runs it (its lock is free); resume with: " << st.resume_command << "\n";
  if (!st.collect_ids.empty())
    os << "collect job " << st.collect_ids.back() << ": " << st.collect_state
       << (fs::exists(run::RunDir(st.run_dir).index_file()) ? "; results.h5 present" : "; no results.h5 yet")
       << "\n";
  base::TableStyle style;
  style.fit = base::TableStyle::Fit::Drop;
  style.heading = false;
  style.width = width;
  std::vector<base::Table> tables;  // moved in: an initializer list would copy 100,000 rows
  tables.push_back(jobs_table(st, /*for_people=*/true));
  base::render_tables(tables, style, os);
}

}  // namespace

void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os, int width) {
  switch (fmt) {
    case StatusFormat::Json: return print_json(st, os);
    case StatusFormat::Csv: return print_csv(st, os);
    case StatusFormat::Table: return print_table(st, width, os);
  }
}

}  // namespace gridrun::status
