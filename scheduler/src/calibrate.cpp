// `gridrun calibrate` (see calibrate.hpp): configurations run alone, then the side-by-side groups
// the policy would make, each through the same executor as `gridrun run`, measured from their job
// files.
#include "gridrun/scheduler/calibrate.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "executor.hpp"
#include "gridrun/base/checked.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/json_checked.hpp"
#include "gridrun/base/stats.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/run/run_dir.hpp"
#include "idle_places.hpp"
#include "launch_spec.hpp"
#include "predict.hpp"
#include "worker_pool.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

using Clock = std::chrono::steady_clock;

// One calibration run: a job of the configuration, placed and launched like a real one, and the
// jobs chained after it in the same process (`then`, alone only).
struct Probe {
  std::string key;
  jobs::Job job;
  std::vector<jobs::Job> then;
  Request req;
  std::unique_ptr<RunningJob> proc;
  double exit_unix = 0;
  int code = -1;
};

// The figures of each job of a finished calibration run (see figures_from_file), the launched one
// first, with a line on `out` for each that has none.
std::vector<std::optional<StepFigures>> measure(const run::RunDir& crd, const Probe& p, bool side_by_side,
                                                BuildVersions& versions, std::ostream& out) {
  std::vector<const jobs::Job*> jobs{&p.job};
  for (const auto& j : p.then) jobs.push_back(&j);
  std::vector<std::optional<StepFigures>> res(jobs.size());
  if (p.code != 0) {
    out << "calibrate: " << config_label(p.job.params) << (p.then.empty() ? "" : " and the jobs after it")
        << ": gridrun-train exited " << p.code << " (see " << crd.log_err(p.job.id) << ")\n";
    return res;
  }
  // The last job's exit is the process's; the jobs before it share that tail (MPI finalize and
  // process exit happen once, after the last).
  double tail = std::nan("");
  for (std::size_t k = jobs.size(); k-- > 0;) {
    const jobs::Job& j = *jobs[k];
    std::string why;
    FigureOptions fo{j.params.timing_warmup_steps, p.exit_unix, side_by_side};
    if (k + 1 < jobs.size()) fo.tail_s = std::isfinite(tail) ? tail : 0.0;
    res[k] = figures_from_file(crd.result_file(j.id), fo, versions, why);
    if (!res[k]) out << "calibrate: " << config_label(j.params) << ": " << why << "\n";
    if (k + 1 == jobs.size() && res[k]) tail = res[k]->tail_s;
  }
  return res;
}

// The load beside one calibration run: a CPU snapshot when it starts, the other processes' share
// of the CPU when its processes have all been reaped (as a compare-by phase measures it).
class LoadWatch {
 public:
  LoadWatch() : cpu0_(base::cpu_snapshot()), t0_(Clock::now()) {}
  double share() const {
    return base::outside_cpu_share(cpu0_, base::cpu_snapshot(),
                                   std::chrono::duration<double>(Clock::now() - t0_).count());
  }

 private:
  base::CpuSnapshot cpu0_;
  Clock::time_point t0_;
};

// A measurement still disturbed after its repeats, without --accept-load: calibrate_grid stores
// nothing and says why (CalibrateOutcome::refused).
struct StillDisturbed {
  std::string what;
};

class Calibrator {
 public:
  Calibrator(const GridPlan& plan, const CalibrateOptions& o, std::string train, std::ostream& out)
      : plan_(plan),
        o_(o),
        train_(std::move(train)),
        out_(out),
        rd_(run::RunDir::for_grid(o.run.out, plan.ex.name)),
        crd_(rd_.root() + "/calibration"),
        acrd_(fs::absolute(crd_.root()).lexically_normal().string()),
        exec_(make_executor("local")),
        pool_(*exec_) {}

  // Runs `members` side by side (one when alone): each with `steps[k]` timed steps.
  std::vector<std::optional<StepFigures>> run_group(const std::vector<std::size_t>& members,
                                                    const std::vector<std::int64_t>& steps, int tag) {
    std::vector<Probe> probes;
    Engine engine(plan_.cluster, EngineOptions{o_.run.policy, 0});
    for (std::size_t k = 0; k < members.size(); ++k) {
      const jobs::Job& src = plan_.ex.jobs[members[k]];
      // The same configuration twice in a group: two seeds, two files.
      const jobs::JobParams p =
          calibration_params(src.params, steps[k], std::int64_t{1000} * tag + static_cast<std::int64_t>(k));
      Probe pr;
      pr.key = config_key(src.params);
      pr.job = jobs::make_job(plan_.ex.name + "-calibration", k, p);
      pr.req = plan_.req[members[k]];
      probes.push_back(std::move(pr));
      engine.submit(QueuedJob{k, k, probes.back().req, 1.0});
    }
    // Members go where an idle worker of their process waits (idle_places.hpp), as in `gridrun run`.
    IdlePlaces idle([&](std::size_t k) { return jobs::process_key(probes[k].job.params).text(); });
    pool_.offer_idle(idle);
    engine.set_preference(&idle);
    const auto starts = engine.schedule(0);
    if (starts.size() < probes.size())
      throw std::runtime_error("calibrate: the group does not fit side by side on " + plan_.cluster.source);
    const LoadWatch load;
    for (const Start& s : starts) launch(probes[s.key], s);
    // Wait for every member; the exit time is the launcher's view of the job's end.
    for (bool left = true; left;) {
      left = false;
      for (auto& p : probes) {
        if (!p.proc) continue;
        if (const auto code = p.proc->try_wait()) {
          p.code = *code;
          p.exit_unix = base::unix_now();
          p.proc.reset();
        } else {
          left = true;
        }
      }
      if (left) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    last_share_ = load.share();
    std::vector<std::optional<StepFigures>> out;
    for (const auto& p : probes) {
      auto f = measure(crd_, p, probes.size() > 1, versions_, out_)[0];
      if (!f) ++failed_;
      if (f) f->other_cpu_share = last_share_;
      out.push_back(f);
    }
    return out;
  }

  // Measures `members` alone, one after another in one process (plan_alone_processes): the first
  // launched, the others chained after it with --then-job; each with `steps[k]` timed steps.
  std::vector<std::optional<StepFigures>> run_chain(const std::vector<std::size_t>& members,
                                                    const std::vector<std::int64_t>& steps) {
    Probe pr;
    for (std::size_t k = 0; k < members.size(); ++k) {
      const jobs::Job& src = plan_.ex.jobs[members[k]];
      jobs::Job j =
          jobs::make_job(plan_.ex.name + "-calibration", k, calibration_params(src.params, steps[k], 0));
      if (k == 0) {
        pr.key = config_key(src.params);
        pr.job = std::move(j);
        pr.req = plan_.req[members[k]];
      } else {
        pr.then.push_back(std::move(j));
      }
    }
    Engine engine(plan_.cluster, EngineOptions{o_.run.policy, 0});
    engine.submit(QueuedJob{0, 0, pr.req, 1.0});
    const auto starts = engine.schedule(0);
    if (starts.empty())
      throw std::runtime_error("calibrate: " + config_label(pr.job.params) + " does not fit on " +
                               plan_.cluster.source);
    const LoadWatch load;
    launch(pr, starts[0]);
    while (pr.proc) {
      if (const auto code = pr.proc->try_wait()) {
        pr.code = *code;
        pr.exit_unix = base::unix_now();
        pr.proc.reset();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    last_share_ = load.share();
    auto out = measure(crd_, pr, false, versions_, out_);
    for (auto& f : out) {
      failed_ += f ? 0 : 1;
      if (f) f->other_cpu_share = last_share_;
    }
    return out;
  }

  void launch(Probe& p, const Start& s) {
    const Cluster& cluster = plan_.cluster;
    const Node& node = cluster.nodes[s.alloc.node];
    p.job.meta["cores"] = cores_string(cluster, s.alloc);
    p.job.meta["gpus"] = gpus_string(cluster, s.alloc);
    p.job.meta["host"] = node.name;
    p.job.meta["sitting"] = "calibrate";
    jobs::write_job_file(crd_.job_file(p.job.id), p.job);
    ++launches_;
    LaunchSpec spec = launch_spec_for(
        p.job.id, LaunchPlace{acrd_, cluster, s.alloc, p.req, jobs::process_key(p.job.params).text()});
    // --launch warm: a group's members take the workers the configurations alone left on their
    // cores (measure_groups keeps the cold launch of each from its alone figures).
    spec.warm = o_.run.launch == run::Launch::Warm;
    // A command job (docs/own-script.md): gridrun-exec runs the user's program, cold, for as many
    // steps as GRIDRUN_MAX_STEPS says (and stops one that goes on past them).
    if (const std::string why = set_program(spec, p.job.params, train_, default_exec_bin()); !why.empty())
      out_ << "calibrate: " << config_label(p.job.params) << ": " << why << "\n";
    for (auto& j : p.then) {
      j.meta = p.job.meta;
      jobs::write_job_file(crd_.job_file(j.id), j);
      spec.then_job_files.push_back(acrd_.job_file(j.id));
    }
    p.proc = pool_.launch(spec);
  }

  const run::RunDir& run_dir() const { return rd_; }
  const run::RunDir& cal_dir() const { return crd_; }
  int failed() const { return failed_; }
  int launches() const { return launches_; }
  const BuildVersions& versions() const { return versions_; }
  // The share of the CPU other processes took during the last run_chain or run_group.
  double last_share() const { return last_share_; }

 private:
  const GridPlan& plan_;
  const CalibrateOptions& o_;
  std::string train_;
  std::ostream& out_;
  run::RunDir rd_, crd_;
  run::RunDir acrd_;  // crd_ absolute (what launched processes get)
  std::unique_ptr<Executor> exec_;
  WorkerPool pool_;  // --launch warm: the workers a chain leaves take a group's members
  BuildVersions versions_;
  int failed_ = 0, launches_ = 0;
  double last_share_ = std::nan("");
};

}  // namespace

std::vector<std::vector<std::size_t>> predicted_groups(const RunOptions& ro, const Calibration& cal,
                                                       std::ostream& log) {
  RunOptions o = ro;
  o.simulate = true;  // a cluster file may describe hosts a job spans
  const GridPlan plan = plan_grid(o, log);
  std::map<std::string, std::size_t> rep_of;
  for (std::size_t i = 0; i < plan.ex.jobs.size(); ++i) rep_of.emplace(config_key(plan.ex.jobs[i].params), i);
  const PredictedGrid first = predict_grid(plan, cal, plan.cost, PredictOptions{sim_options_of(o), ""});
  std::vector<std::vector<std::size_t>> out;
  for (const auto& g : side_by_side_groups(plan, first.result)) {
    std::vector<std::size_t> members;
    for (const auto& key : g) members.push_back(rep_of.at(key));
    out.push_back(std::move(members));
  }
  return out;
}

namespace {

// One representative job per configuration, in grid order, and how many timed steps it gets: no
// more than the configuration's longest job runs (capped_steps).
struct Representatives {
  std::vector<std::size_t> jobs;                 // job index per configuration
  std::map<std::string, std::size_t> job_of;     // config key -> job index
  std::map<std::string, std::int64_t> steps_of;  // config key -> timed steps
  std::vector<jobs::JobParams> params;           // per configuration
};

Representatives choose_representatives(const GridPlan& plan, std::int64_t steps) {
  Representatives r;
  std::map<std::string, std::int64_t> longest;  // known_steps; 0 once one job's count is unknown
  for (std::size_t i = 0; i < plan.ex.jobs.size(); ++i) {
    const auto& params = plan.ex.jobs[i].params;
    const std::string key = config_key(params);
    const std::int64_t n = known_steps(params);
    const auto [it, fresh] = longest.emplace(key, n);
    if (!fresh) it->second = it->second == 0 || n == 0 ? 0 : std::max(it->second, n);
    if (r.job_of.emplace(key, i).second) r.jobs.push_back(i);
  }
  for (const std::size_t j : r.jobs) {
    const auto& params = plan.ex.jobs[j].params;
    const std::string key = config_key(params);
    r.steps_of[key] = capped_steps(steps, longest[key], params.timing_warmup_steps);
    r.params.push_back(params);
  }
  return r;
}

// One calibration run (`run`), taken again while other processes took more than
// kCalibrationLoadShare of the CPU during it, up to o.disturbed_repeats more times; the conditions
// go to `c.conditions`. Still disturbed: throws StillDisturbed, unless o.accept_load (then it is
// kept, and the conditions say so). Why repeat before refusing: a burst of other work (a build, an
// editor's indexer) passes; a steady load does not, and a prediction from it is wrong.
template <class Run, class Share>
auto measured_quietly(const CalibrateOptions& o, Calibration& c, const std::string& what, std::ostream& out,
                      Run run, Share share) {
  for (int attempt = 0;; ++attempt) {
    auto figs = run();
    const double s = share();
    const bool disturbed = std::isfinite(s) && s > kCalibrationLoadShare;
    const std::string pct = base::format_fixed(100 * s, 0) + " %";
    if (disturbed && !o.accept_load && attempt < o.disturbed_repeats) {
      out << "  disturbed: other processes took " << pct << " of the CPU while " << what
          << " was measured (more than " << base::format_fixed(100 * kCalibrationLoadShare, 0)
          << " %): measuring it again\n";
      ++c.conditions.repeated;
      continue;
    }
    if (disturbed && !o.accept_load)
      throw StillDisturbed{
          "other processes took " + pct + " of the CPU while " + what + " was measured" +
          (attempt > 0 ? ", in each of " + std::to_string(attempt + 1) + " tries" : std::string()) +
          " (more than " + base::format_fixed(100 * kCalibrationLoadShare, 0) + " %)"};
    if (std::isfinite(s)) {
      double& m = c.conditions.max_other_cpu_share;
      m = std::isfinite(m) ? std::max(m, s) : s;
      c.conditions.accepted_load = c.conditions.accepted_load || disturbed;
    }
    return figs;
  }
}

// The median of each time of a configuration's launches (the other fields: the first launch's).
StepFigures median_figures(const std::vector<StepFigures>& runs) {
  StepFigures f = runs.front();
  const auto median = [&runs](double StepFigures::*field) {
    std::vector<double> v;
    for (const StepFigures& r : runs)
      if (std::isfinite(r.*field)) v.push_back(r.*field);
    return v.empty() ? runs.front().*field : base::median(std::move(v));
  };
  for (double StepFigures::*field :
       {&StepFigures::launch_s, &StepFigures::warm_launch_s, &StepFigures::warm_s, &StepFigures::step_s,
        &StepFigures::eval_s, &StepFigures::checkpoint_s, &StepFigures::tail_s,
        &StepFigures::other_cpu_share})
    f.*field = median(field);
  return f;
}

// Each configuration alone (chained in shared processes when `o.share_process`), into `c.alone`:
// o.alone_launches launches each, its figures the median of theirs.
void measure_alone(Calibrator& cal, const GridPlan& plan, const CalibrateOptions& o,
                   const Representatives& reps, Calibration& c, std::ostream& out) {
  std::vector<std::vector<std::size_t>> processes;
  // gridrun-exec runs one program per launch: command jobs are never chained (--then-job).
  const bool command =
      !reps.params.empty() && jobs::model_kind(reps.params.front()) == jobs::ModelKind::command;
  if (o.share_process && !command) {
    processes = plan_alone_processes(reps.params);
  } else {
    for (std::size_t k = 0; k < reps.jobs.size(); ++k) processes.push_back({k});
  }
  out << "calibrate " << plan.ex.name << ": " << reps.jobs.size() << " configuration(s) of "
      << plan.ex.jobs.size() << " jobs in " << processes.size() << " launch(es), up to " << o.steps
      << " timed steps each, on " << plan.cluster.source << "\n";
  for (const auto& proc : processes) {
    std::vector<std::size_t> members;
    std::vector<std::int64_t> steps;
    for (const std::size_t k : proc) {
      members.push_back(reps.jobs[k]);
      steps.push_back(reps.steps_of.at(config_key(reps.params[k])));
    }
    const std::string what = config_label(reps.params[proc[0]]);
    std::vector<std::vector<StepFigures>> runs(proc.size());  // per member, its launches' figures
    for (int launch = 0; launch < std::max(1, o.alone_launches); ++launch) {
      const auto figs = measured_quietly(
          o, c, what + (proc.size() > 1 ? " and the configurations after it" : ""), out,
          [&] { return cal.run_chain(members, steps); }, [&] { return cal.last_share(); });
      for (std::size_t m = 0; m < proc.size(); ++m)
        if (figs[m]) runs[m].push_back(*figs[m]);
    }
    for (std::size_t m = 0; m < proc.size(); ++m) {
      const std::size_t k = proc[m];
      const std::string key = config_key(reps.params[k]);
      c.labels[key] = config_label(reps.params[k]);
      if (runs[m].empty()) continue;
      c.alone[key] = median_figures(runs[m]);
      out << "  [" << (k + 1) << "/" << reps.jobs.size() << "] " << c.labels[key] << " alone"
          << (m > 0 ? ", in the process of [" + std::to_string(proc[0] + 1) + "]" : std::string()) << ", "
          << steps[m] << " steps"
          << (runs[m].size() > 1 ? ", median of " + std::to_string(runs[m].size()) + " launches"
                                 : std::string())
          << ": " << describe_alone(c.alone[key]) << "\n";
    }
  }
}

// The side-by-side groups of `first` (the schedule predicted from the alone figures) while the
// budget lasts, into `c.groups`; the groups left out go to `res.skipped`.
void measure_groups(Calibrator& cal, const GridPlan& plan, const CalibrateOptions& o,
                    const Representatives& reps, const PredictedGrid& first, Clock::time_point t0,
                    CalibrateOutcome& res, std::ostream& out) {
  Calibration& c = res.cal;
  int tag = 1;
  for (const auto& g : side_by_side_groups(plan, first.result)) {
    auto run = plan_group_run(c, g, o.steps, o.group_train_s);
    if (!run) continue;
    // Never longer than the members' own jobs: beside each other they overlap only that long.
    run->longest_s = 0;
    for (std::size_t k = 0; k < g.size(); ++k) {
      run->steps[k] = std::min(run->steps[k], reps.steps_of.at(g[k]));
      const StepFigures& f = c.alone.at(g[k]);
      run->longest_s = std::max(
          run->longest_s, f.launch_s + f.warm_s + static_cast<double>(run->steps[k]) * f.step_s + f.tail_s);
    }
    const double spent = std::chrono::duration<double>(Clock::now() - t0).count();
    if (spent + run->longest_s > res.budget_s) {
      res.skipped.push_back(run->label);
      continue;
    }
    std::vector<std::size_t> members;
    for (const auto& key : g) members.push_back(reps.job_of.at(key));
    const auto figs = measured_quietly(
        o, c, run->label + " side by side", out, [&] { return cal.run_group(members, run->steps, tag++); },
        [&] { return cal.last_share(); });
    CalibrationGroup cg;
    cg.members = g;
    for (std::size_t k = 0; k < g.size(); ++k)
      if (figs[k] && !cg.figures.count(g[k])) {
        StepFigures f = *figs[k];
        if (f.launched_warm) {  // a cold launch is what the figures keep; the warm one is warm_launch_s
          f.launch_s = c.alone.at(g[k]).launch_s;
          f.tail_s = c.alone.at(g[k]).tail_s;
        }
        cg.figures[g[k]] = f;
      }
    if (cg.figures.size() < std::set<std::string>(g.begin(), g.end()).size()) continue;
    out << "  side by side: " << run->label << ": " << describe_group(c, cg) << "\n";
    c.groups.push_back(std::move(cg));
  }
}

// Bad input (steps, a cluster file, a job that is not training, the binary) before anything runs.
GridPlan checked_plan(const CalibrateOptions& o, const std::string& train, std::ostream& out) {
  if (o.steps < 3 || o.steps > 100000) throw std::invalid_argument("--steps: must be in [3, 100000]");
  if (!o.run.resources.cluster_file.empty())
    throw std::invalid_argument(
        "--cluster: without --slurm `gridrun calibrate` measures this machine; to calibrate on a "
        "cluster's nodes use --slurm --cluster FILE (docs/scheduler.md, \"Predicting a grid before running "
        "it\")");
  RunOptions ro = o.run;
  ro.simulate = false;
  GridPlan plan = plan_grid(ro, out);
  for (const auto& j : plan.ex.jobs)
    if (j.params.task != jobs::Task::train)
      throw std::invalid_argument(o.run.grid + ": job " + j.id +
                                  " is task=" + base::to_string(j.params.task) +
                                  "; calibration predicts training jobs only");
  if (train.find('/') != std::string::npos && ::access(train.c_str(), X_OK) != 0)
    throw std::invalid_argument("--train-bin: " + train + " is not an executable file");
  return plan;
}

// The calibration's end: its figures stored in calibration.json and the grid predicted from them.
CalibrateOutcome finish(const Calibrator& cal, const GridPlan& plan, Clock::time_point t0,
                        const PredictOptions& po, CalibrateOutcome res) {
  Calibration& c = res.cal;
  c.versions = cal.versions();
  c.cost_s = std::chrono::duration<double>(Clock::now() - t0).count();
  res.failed = cal.failed();
  res.launches = cal.launches();
  res.file = cal.run_dir().calibration_file();
  write_calibration(res.file, c);
  const PredictedGrid pred = predict_grid(plan, c, plan.cost, po);
  res.predicted_s = pred.result.makespan_s;
  return res;
}

// Alone, then side by side while the budget lasts (throws StillDisturbed).
CalibrateOutcome measure_all(Calibrator& cal, const GridPlan& plan, const CalibrateOptions& o,
                             const std::string& train, std::ostream& out) {
  const auto t0 = Clock::now();
  CalibrateOutcome res;
  Calibration& c = res.cal;
  c.host = base::hostname();
  c.train_bin = train;
  c.build = build_fingerprint(train);
  c.created = base::iso_now();
  const Representatives reps = choose_representatives(plan, o.steps);
  measure_alone(cal, plan, o, reps, c, out);
  // The groups the policy makes, from the schedule predicted with the alone figures.
  PredictOptions po{sim_options_of(o.run), c.created};
  const PredictedGrid first = predict_grid(plan, c, plan.cost, po);
  // The floor keeps a short grid's prediction whole (its side-by-side groups measured: predicted
  // from alone figures they were 20-46 % off); from a minute of grid it may not lift the
  // calibration above 25 % of the grid (issue 44's goal), where the share alone decides.
  const double grid_s = first.result.makespan_s;
  const double floor_s =
      grid_s >= kLongGridS ? std::min(o.min_budget_s, kMaxLongGridShare * grid_s) : o.min_budget_s;
  res.budget_s = std::max(floor_s, o.budget_share * grid_s);
  measure_groups(cal, plan, o, reps, first, t0, res, out);
  return finish(cal, plan, t0, po, std::move(res));
}

}  // namespace

CalibrateOutcome calibrate_grid(const CalibrateOptions& o, std::ostream& out) {
  const std::string train = o.run.train_bin.empty() ? default_train_bin() : o.run.train_bin;
  const GridPlan plan = checked_plan(o, train, out);
  Calibrator cal(plan, o, train, out);
  fs::create_directories(cal.run_dir().root());
  run::RunLock lock(cal.run_dir());
  std::error_code ec;
  fs::remove_all(cal.cal_dir().root(), ec);  // ours alone: earlier calibration runs
  cal.cal_dir().create_layout();
  try {
    return measure_all(cal, plan, o, train, out);
  } catch (const StillDisturbed& d) {
    CalibrateOutcome res;
    res.refused = d.what;
    res.failed = cal.failed();
    res.launches = cal.launches();
    return res;
  }
}

}  // namespace gridrun::scheduler
