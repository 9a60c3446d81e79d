// `gridrun run` as a library call: validation, the plan (--dry-run, --simulate) and the real run
// through RunLoop (run_loop.hpp). See run_grid.hpp for the sequence and docs/scheduler.md for the
// user-facing behaviour.
#include "gridrun/scheduler/run_grid.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <stdexcept>

#include "executor.hpp"
#include "grid_plan.hpp"
#include "gridrun/base/bytes.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/sha256.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/tee.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/dataset/data_file.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/run/run_summary.hpp"
#include "gridrun/scheduler/model_check.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "predict.hpp"
#include "run_loop.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

// "2 jobs x 1 rank, side by side", as the report names a phase's arrangement (run::arrangement_text).
std::string arrangement(const GridPlan& plan, const std::string& phase, const run::PhasePrediction& p) {
  std::vector<const jobs::JobParams*> params;
  for (std::size_t i = 0; i < plan.ex.jobs.size(); ++i)
    if (i < plan.phase.size() && plan.phase[i] == phase) params.push_back(&plan.ex.jobs[i].params);
  return run::arrangement_text(params, p.max_running > 1);
}

std::string seconds(double s) { return base::format_fixed(s, s < 10 ? 2 : 1) + " s"; }

using run::phase_label;  // "KEY=VALUE", "KEY=VALUE #N" for a later repeat

// What the measured run says, from its state.json (the scheduler's record: launch to exit per job,
// makespan per phase); the report's sitting checks stay the report's.
struct Measured {
  std::map<std::string, double> job_s, phase_s;
};
Measured measured_run(const std::string& dir) {
  const run::RunDir rd(dir);
  std::error_code ec;
  if (!fs::is_directory(rd.results_dir(), ec))
    throw std::invalid_argument("--against " + dir + ": not a run directory (no results/ folder)");
  Measured m;
  const run::RunState st = fs::is_regular_file(rd.state_file(), ec) ? rd.load_state() : run::RunState{};
  for (const auto& [id, rec] : st.jobs)
    if (run::is_finished(rec.state) && rec.end_unix > rec.start_unix && rec.start_unix > 0)
      m.job_s[id] = rec.end_unix - rec.start_unix;
  for (const auto& [name, ph] : st.phases)
    if (std::isfinite(ph.makespan_s)) m.phase_s[name] = ph.makespan_s;
  if (!m.phase_s.empty()) return m;
  // A Slurm run: no scheduler of ours saw it; as the report does, a phase runs from its first
  // job's start to its last job's end in the job files, and a job from its launch to its end.
  // Through the run reader (its index, one guarded copy for all files), as the report reads them.
  std::map<std::string, std::pair<double, double>> span;
  for (const auto& f : results::read_job_files(rd.results_dir(), results::list_job_files(rd.results_dir()),
                                               results::FolderReadOptions{})) {
    if (!f.ok) continue;  // the report names unreadable files; a prediction check skips them
    const results::JobData& d = f.data;
    if (d.status != "completed" && d.status != "target_reached") continue;
    const double start = d.attr_number("start_unix", std::nan("")),
                 end = d.attr_number("end_unix", std::nan(""));
    const auto launched = d.summary.find("launched_unix");
    const double from =
        launched != d.summary.end() && std::isfinite(launched->second) ? launched->second : start;
    if (!std::isfinite(from) || !std::isfinite(end)) continue;
    m.job_s[d.id] = end - from;
    const std::string phase = d.attr_string("meta.phase");
    auto [it, fresh] = span.emplace(phase, std::make_pair(from, end));
    if (!fresh) it->second = {std::min(it->second.first, from), std::max(it->second.second, end)};
  }
  for (const auto& [phase, se] : span) m.phase_s[phase] = se.second - se.first;
  return m;
}

std::string error_pct(double predicted, double measured) {
  if (!(measured > 0) || !std::isfinite(predicted)) return "-";
  return base::format_fixed(100.0 * (predicted - measured) / measured, 1) + " %";
}

void print_against(const GridPlan& plan, const run::Prediction& p, const std::string& dir, int rows,
                   std::ostream& out) {
  const Measured m = measured_run(dir);
  const std::string& key = plan.ex.compare_by;
  // Which way the sign goes, said once (issue 58): error = (predicted - measured) / measured.
  out << "prediction vs measurement (" << dir << "):\n"
      << "  error = (predicted - measured) / measured: + the run took less time than predicted, - more\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-22s %12s %12s %9s\n", "phase", "predicted_s", "measured_s", "error");
  out << line;
  std::vector<double> errs;
  for (const auto& name : p.phase_order) {
    const double pred = p.phases.at(name).makespan_s;
    const auto it = m.phase_s.find(name);
    const double meas = it == m.phase_s.end() ? std::nan("") : it->second;
    std::snprintf(line, sizeof line, "  %-22.22s %12s %12s %9s\n", phase_label(key, name).c_str(),
                  base::format_fixed(pred, 1).c_str(), base::format_fixed(meas, 1).c_str(),
                  error_pct(pred, meas).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-22s %12s %12s %9s\n", "job", "predicted_s", "measured_s", "error");
  out << line;
  int shown = 0;
  for (const auto& j : plan.ex.jobs) {
    const auto pit = p.job_seconds.find(j.id);
    if (pit == p.job_seconds.end()) continue;
    const auto it = m.job_s.find(j.id);
    const double meas = it == m.job_s.end() ? std::nan("") : it->second;
    if (meas > 0) errs.push_back(std::fabs(pit->second - meas) / meas);
    if (shown++ == rows) {
      out << "  ... (--rows " << rows << ")\n";
      continue;
    }
    if (shown > rows) continue;
    std::snprintf(line, sizeof line, "  %-22.22s %12s %12s %9s\n", j.id.c_str(),
                  base::format_fixed(pit->second, 1).c_str(), base::format_fixed(meas, 1).c_str(),
                  error_pct(pit->second, meas).c_str());
    out << line;
  }
  if (!errs.empty()) {
    std::sort(errs.begin(), errs.end());
    out << "  jobs: " << errs.size() << " measured, median |error| "
        << base::format_fixed(100 * errs[errs.size() / 2], 1) << " %, worst "
        << base::format_fixed(100 * errs.back(), 1) << " %\n";
  }
}

// "predicted: ranks=2 (2 jobs x 2 ranks, one after another) 14.2 s; ranks=1 (2 jobs x 1 rank, side
// by side) 23.6 s: ranks=2 wins, 1.66x faster" (two or more phases), "" otherwise.
std::string predicted_verdict(const GridPlan& plan, const run::Prediction& p, const std::string& compare_by) {
  // Repeats of a value are predicted alike: the verdict compares the values, by their first.
  std::vector<std::string> names;
  for (const auto& name : p.phase_order)
    if (run::split_phase(name).repeat == 0) names.push_back(name);
  if (names.size() < 2) return "";
  std::string s = "predicted (" + p.source + "): ";
  std::string best, second;
  for (const auto& name : names) {
    const auto& ph = p.phases.at(name);
    s += (name == names.front() ? "" : "; ") + phase_label(compare_by, name) + " (" +
         arrangement(plan, name, ph) + ") " + seconds(ph.makespan_s);
    if (best.empty() || ph.makespan_s < p.phases.at(best).makespan_s) {
      second = best;
      best = name;
    } else if (second.empty() || ph.makespan_s < p.phases.at(second).makespan_s) {
      second = name;
    }
  }
  const double a = p.phases.at(best).makespan_s, b = p.phases.at(second).makespan_s;
  s += ": " + phase_label(compare_by, best) + " wins, " + base::format_fixed(b / a, 2) + "x faster";
  if (names.size() > 2) s += " than " + phase_label(compare_by, second);
  if (names.size() < p.phase_order.size())
    s += " (each of " + std::to_string(p.phase_order.size() / names.size()) + " repeats)";
  return s;
}

base::Json plan_json(const GridPlan& plan, const std::vector<SimJob>& sims, const SimResult& sim,
                     const run::Prediction& p, const std::string& durations) {
  base::Json j = base::Json::object();
  j["grid"] = plan.ex.name;
  j["policy"] = p.policy;
  j["durations"] = durations;
  j["compare_by"] = plan.ex.compare_by;
  j["makespan_s"] = base::json_number(sim.makespan_s, 6);
  base::Json phases = base::Json::object();
  for (const auto& name : p.phase_order) {
    const auto& ph = p.phases.at(name);
    base::Json one = base::Json::object();
    one["makespan_s"] = base::json_number(ph.makespan_s, 6);
    one["jobs"] = ph.jobs;
    one["max_running"] = ph.max_running;
    one["arrangement"] = arrangement(plan, name, ph);
    base::append_new_member(phases, name.empty() ? std::string("all") : name, std::move(one));
  }
  j["phases"] = std::move(phases);
  base::Json jobs = base::Json::array();
  for (std::size_t i = 0; i < sims.size(); ++i) {
    base::Json one = base::Json::object();
    one["id"] = sims[i].id;
    one["phase"] = sims[i].phase;
    one["start_s"] = base::json_number(sim.placements[i].start_s, 6);
    one["end_s"] = base::json_number(sim.placements[i].end_s, 6);
    jobs.push_back(std::move(one));
  }
  j["jobs"] = std::move(jobs);
  return j;
}

// The notes under a simulated schedule: what its durations cannot know.
void plan_notes(const jobs::Expansion& ex, const std::string& grid, bool calibrated, std::ostream& out) {
  std::size_t targets = 0;
  for (const auto& j : ex.jobs) targets += j.params.target_accuracy > 0 ? 1 : 0;
  if (targets > 0)
    out << "note: " << targets
        << " job(s) stop early at their target_accuracy: predicted to stop at their first evaluation "
        << "when the calibration reached it, else to run all their epochs (an upper bound)\n";
  // A command job's program is the user's: the cost model knows nothing of it, so without a
  // calibration its duration is only trustworthy from an earlier run's results.
  const std::size_t commands =
      static_cast<std::size_t>(std::count_if(ex.jobs.begin(), ex.jobs.end(), [](const jobs::Job& j) {
        return jobs::model_kind(j.params) == jobs::ModelKind::command;
      }));
  if (commands > 0 && !calibrated)
    out << "note: " << commands << " command job(s) (your own program): without a calibration "
        << "(`gridrun calibrate " << grid << "`) their durations come from an earlier run's results "
        << "only, else from the cost model, which knows nothing of your program\n";
  if (!calibrated && !ex.compare_by.empty() && commands < ex.jobs.size())
    out << "note: uncalibrated: the cost model assumes perfect scaling and no launch cost, so it cannot "
           "tell one large job from several small; `gridrun calibrate "
        << grid << "` measures them\n";
}

// --dry-run and --simulate: the simulated schedule, and for --dry-run the first commands.
RunOutcome print_plan(const GridPlan& plan, const RunOptions& o, std::ostream& out) {
  const jobs::Expansion& ex = plan.ex;
  const Cluster& cluster = plan.cluster;
  const run::RunDir rd = run::RunDir::for_grid(o.out, ex.name);
  const std::string train = o.train_bin.empty() ? default_train_bin() : o.train_bin;
  std::string why;
  // A calibration of this host and build wins; else earlier results of the same ids, else the
  // cost model.
  // A cluster file describes Slurm's nodes: a calibration made through Slurm fits it.
  const auto cal = usable_calibration(rd.root(), train, !o.resources.cluster_file.empty(), why);
  // The entries read_calibration left out, one line each (on stderr beside JSON output).
  if (cal)
    for (const auto& w : cal->warnings) (o.format == "json" ? std::cerr : out) << "warning: " << w << "\n";
  std::vector<SimJob> sims(ex.jobs.size());
  SimResult sim;
  run::Prediction record;
  std::string durations;
  if (cal) {
    PredictedGrid g = predict_grid(plan, *cal, plan.cost, PredictOptions{sim_options_of(o), base::iso_now()});
    sims = std::move(g.jobs);
    sim = std::move(g.result);
    record = std::move(g.record);
    durations = "calibration of " + cal->created + " (" + std::to_string(g.alone) + " alone, " +
                std::to_string(g.grouped) + " side by side, " + std::to_string(g.uncalibrated) +
                " from the cost model)";
    // prediction.json is what was predicted before the run spent anything: once the run has
    // started (state.json exists), only `gridrun run` replaces it, at the start of its sitting, so
    // a later simulate never rewrites what the report puts beside a finished run.
    std::error_code sec;
    if (!o.dry_run && !fs::exists(rd.state_file(), sec))
      run::write_prediction(rd.prediction_file(), record);
    else if (!o.dry_run && o.against.empty())
      (o.format == "json" ? std::cerr : out) << "note: " << rd.prediction_file()
                                             << " kept: it holds what was predicted before the run started "
                                                "(the next `gridrun run` writes a new one)\n";
  } else {
    std::size_t from_results = 0;
    Durations measured;
    std::error_code ec;
    if (fs::is_directory(rd.results_dir(), ec)) {
      results::ResultsFolder folder(rd.results_dir());
      measured = measured_durations(folder, ex.jobs);
    }
    for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
      bool fr = false;
      sims[i].id = ex.jobs[i].id;
      sims[i].req = plan.req[i];
      sims[i].duration_s = estimate_for(ex.jobs[i], measured, plan.cost, &fr);
      sims[i].phase = plan.phase[i];
      from_results += fr;
    }
    sim = simulate(cluster, sims, sim_options_of(o));
    durations = std::to_string(from_results) + " from previous results, " +
                std::to_string(ex.jobs.size() - from_results) + " from the cost model (uncalibrated)";
    record = prediction_record(sims, sim, RecordInfo{"cost model", o.policy, ""});
  }
  if (o.format == "json" && !o.dry_run) {
    out << plan_json(plan, sims, sim, record, durations).dump(1) << "\n";
  } else {
    out << (o.dry_run ? "dry run" : "simulation") << " of " << ex.name << ": "
        << base::counted("job", static_cast<long long>(ex.jobs.size())) << ", policy " << o.policy << ", "
        << cluster.source << " (" << base::counted("node", static_cast<long long>(cluster.nodes.size()))
        << ", " << base::counted("core", cluster.total_cores()) << ", " << cluster.gpus_text() << ")\n"
        << "durations: " << durations << " (see docs/scheduler.md)\n";
    if (cal) out << describe_conditions(*cal) << "\n";
    if (!why.empty()) out << "note: calibration not used: " << why << "\n";
    plan_notes(ex, o.grid, cal != nullptr, out);
    // Phases by their key, as the run's events and the report name them ("ranks=2", not "2").
    SimResult shown = sim;
    if (!ex.compare_by.empty())
      for (auto& ph : shown.phases) ph.value = phase_label(ex.compare_by, ph.value);
    out << render_schedule(cluster, sims, shown, o.width, o.timeline_rows);
    if (const std::string v = predicted_verdict(plan, record, ex.compare_by); !v.empty() && cal)
      out << v << "\n";
  }
  // A calibration that cost more than the grid it predicts: say so, running it is the cheaper answer.
  if (cal)
    if (const std::string note = short_grid_note(cal->cost_s, sim.makespan_s, o.grid); !note.empty())
      (o.format == "json" && !o.dry_run ? std::cerr : out) << note << "\n";
  if (!o.against.empty())
    print_against(plan, record, o.against, o.timeline_rows, o.format == "json" ? std::cerr : out);
  if (o.dry_run && cluster.bindable) {
    auto exec = make_executor(o.executor);
    out << "commands (first " << std::min<std::size_t>(3, ex.jobs.size()) << "):\n";
    for (std::size_t i = 0; i < ex.jobs.size() && i < 3; ++i) {
      const Allocation& alloc = sim.placements[i].alloc;
      LaunchSpec s;
      s.job_id = ex.jobs[i].id;
      s.job_file = rd.job_file(s.job_id);
      s.results_dir = rd.results_dir();
      s.rankfile = rd.rankfile(s.job_id);
      s.req = plan.req[i];
      s.host = cluster.nodes[alloc.node].name;
      for (int c : alloc.cores) s.core_ids.push_back(cluster.nodes[alloc.node].cores[c]);
      s.train_bin =
          jobs::model_kind(ex.jobs[i].params) == jobs::ModelKind::command ? default_exec_bin() : train;
      std::string line = "  ";
      for (const auto& a : exec->command(s)) line += a + " ";
      out << line << "\n";
    }
  }
  RunOutcome res;
  res.run_dir = rd.root();
  res.total = ex.jobs.size();
  return res;
}

}  // namespace

namespace {

// RUN_DIR/.cache/settled: what the last `gridrun run` of this run printed when it had nothing to do
// (every job finished), under run/run_summary.hpp's rules, with the key of what it was asked.
constexpr const char* kSettledCache = "settled";
// A start with nothing to do prints its head line, any warnings and its last line: far less than
// this. A longer output (a run that launched jobs) is neither kept in memory nor replayed.
constexpr std::size_t kSettledMaxBytes = std::size_t{64} * 1024;

// What a run with nothing to do depends on besides the run directory's files (the cache's stamps):
// this build, the grid file as given, the jobs it expands to (ids: parameters, --set, --repeats,
// model and data files' contents), the selection and every option its lines print.
std::string settled_key(const GridPlan& plan, const RunOptions& o, const std::string& train) {
  base::Sha256 h;
  auto add = [&](const std::string& s) {
    const std::uint64_t n = s.size();
    h.update(&n, sizeof n);
    h.update(s.data(), s.size());
  };
  add("gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT ")");
  std::string refused;
  add(base::try_read_file(o.grid, base::kinds::kGridFile, &refused).value_or("\x01" + refused));
  for (const auto& job : plan.ex.jobs) add(job.id);
  add(run::selection_flags(o.overrides, o.only));
  add(o.out + "\n" + o.policy + "\n" + train + "\n" + o.executor + "\n" + run::to_string(o.launch));
  add(std::to_string(o.max_parallel) + " " + std::to_string(o.retries) + " " + std::to_string(o.repeats) +
      " " + std::to_string(o.tty) + " " + std::to_string(o.width));
  add(plan.cluster.source + "\n" + std::to_string(plan.cluster.total_cores()) + "\n" +
      plan.cluster.gpus_text());
  return h.hex_digest();
}

std::optional<RunOutcome> replay_settled(const run::RunDir& rd, const std::string& key, std::ostream& out) {
  const auto bytes = run::read_current_cache(rd, kSettledCache);
  if (!bytes) return std::nullopt;
  try {
    base::ByteReader r(*bytes);
    if (r.view() != key) return std::nullopt;
    const std::string_view said = r.view();
    RunOutcome res;
    res.run_dir = rd.root();
    for (std::size_t* n : {&res.total, &res.completed, &res.failed, &res.skipped}) *n = r.u64();
    res.index_stale = r.u64() != 0;
    res.exit_code = static_cast<int>(r.i64());
    res.launched = true;
    out << said << std::flush;
    return res;
  } catch (const std::exception&) {
    return std::nullopt;  // damaged: the run goes the long way and replaces it
  }
}

void keep_settled(const run::RunDir& rd, const std::string& key, const std::string& said,
                  const RunOutcome& res, const run::SummaryWriteOptions& w) {
  base::ByteWriter b;
  b.str(key);
  b.str(said);
  for (const std::size_t n : {res.total, res.completed, res.failed, res.skipped}) b.u64(n);
  b.u64(res.index_stale ? 1 : 0);
  b.i64(res.exit_code);
  run::write_cache(rd, kSettledCache, b.bytes(), w);
}

}  // namespace

RunOutcome run_grid(const RunOptions& o, std::ostream& out) {
  const GridPlan plan = plan_grid(o, out);
  if (o.dry_run || o.simulate) return print_plan(plan, o, out);
  if (!o.resources.cluster_file.empty())
    throw std::invalid_argument(
        "--cluster describes other machines: use it with --simulate or --dry-run "
        "(gridrun run launches on this machine; use `gridrun submit` for Slurm)");
  const std::string train = o.train_bin.empty() ? default_train_bin() : o.train_bin;
  if (train.find('/') != std::string::npos && ::access(train.c_str(), X_OK) != 0)
    throw std::invalid_argument("--train-bin: " + train + " is not an executable file");
  make_executor(o.executor);  // throws on an unknown name, before anything is written
  // With a calibration of this host and build, the run records what was predicted before it
  // spent anything (prediction.json; the report puts it beside the measurement).
  std::string why;
  const run::RunDir rd = run::RunDir::for_grid(o.out, plan.ex.name);
  // A finished run started again, unchanged since its last start that had nothing to do: that
  // start's lines again, without its state.json, the index and every job reconciled (100,000
  // jobs: 5 s; issue 60). --rerun always goes the long way.
  const std::string key = o.rerun.empty() ? settled_key(plan, o, train) : std::string();
  if (!key.empty())
    if (auto again = replay_settled(rd, key, out)) return *again;
  run::SummaryWriteOptions keep;
  keep.stamps_before = run::run_stamps(rd);
  if (const auto cal = usable_calibration(rd.root(), train, false, why)) {
    for (const auto& w : cal->warnings) out << "warning: " << w << "\n";
    out << "prediction (prediction.json) from the " << describe_conditions(*cal) << "\n";
    const PredictedGrid g =
        predict_grid(plan, *cal, plan.cost, PredictOptions{sim_options_of(o), base::iso_now()});
    run::write_prediction(rd.prediction_file(), g.record);
  }
  base::TeeStream said(out, kSettledMaxBytes);
  RunLoop loop(plan, o, train, said);
  RunOutcome res = loop.run();
  if (!key.empty() && res.to_run == 0 && !res.interrupted && res.completed == res.total && said.whole())
    keep_settled(rd, key, said.kept(), res, keep);
  return res;
}

}  // namespace gridrun::scheduler
