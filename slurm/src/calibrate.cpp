// `gridrun calibrate --slurm` (see calibrate.hpp): one submission per configuration, waited for
// on squeue, measured from its job file.
#include "gridrun/slurm/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/model_check.hpp"
#include "gridrun/scheduler/run_grid.hpp"
#include "gridrun/slurm/submit.hpp"

namespace fs = std::filesystem;

namespace gridrun::slurm {

namespace {

using Clock = std::chrono::steady_clock;

// A grid of exactly these jobs: an include entry of all the parameters of each (global_batch
// follows from batch_per_rank x ranks, and a grid may not give both), the grid's own ones (params:,
// issue 56) by name as jobs::program_params_json writes them. A command grid's jobs also need its
// command: (the program's files by absolute path: this grid lies in the calibration folder), env:
// and params: (each own parameter declared with the value it has).
std::string jobs_grid(const std::string& name, const std::vector<jobs::JobParams>& ps) {
  std::string s =
      "# Written by `gridrun calibrate --slurm`: configurations measured together.\nname: " + name + "\n";
  const bool command = !ps.empty() && jobs::model_kind(ps.front()) == jobs::ModelKind::command;
  if (command) {
    const jobs::JobParams& first = ps.front();
    s += "command: " + base::dump_line(base::Json(jobs::command_with_absolute_files(first))) + "\n";
    if (!first.command_env.empty()) s += "env: " + first.command_env + "\n";
    const base::Json values = base::parse_json(jobs::program_params_json(first), "calibration job");
    base::Json decl = base::Json::object();
    for (const auto& [k, v] : jobs::user_params_of(first)) decl[k] = values.at(k);
    if (!decl.empty()) s += "params: " + base::dump_line(decl) + "\n";
  }
  s += "include:\n";
  for (const auto& p : ps) {
    base::Json j = base::parse_json(jobs::program_params_json(p), "calibration job");
    j.erase("global_batch");
    if (command)
      for (const char* k : {"model", "command", "command_env", "command_dir", "command_sha256"}) j.erase(k);
    s += "  - " + base::dump_line(j) + "\n";
  }
  return s;
}

// Submits `ps` as one grid under `root` and waits (bounded) until Slurm no longer lists it; the
// results files of its jobs, in order, or "" for a job that did not end in time.
std::vector<std::string> submit_and_wait(const std::string& root, const std::string& name,
                                         const std::vector<jobs::JobParams>& ps,
                                         const SlurmCalibrateOptions& o, const SlurmCli& cli,
                                         std::string& why) {
  const std::string grid = (fs::path(root) / (name + ".yaml")).string();
  std::ofstream(grid) << jobs_grid(name, ps);
  const jobs::Expansion ex = jobs::load_grid(grid);
  SubmitOptions so;
  so.grid_file = grid;
  so.out_dir = root;
  so.script = o.script;
  std::ostringstream log;
  const SubmitResult sub = submit(so, cli, log);
  const auto deadline = Clock::now() + std::chrono::duration<double>(o.timeout_s);
  while (!cli.active(sub.array_ids).empty()) {
    if (Clock::now() > deadline) {
      cli.scancel(sub.array_ids);
      why = "not done after " + base::format_duration(o.timeout_s) + ", cancelled";
      break;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
  std::vector<std::string> files;
  for (const auto& j : ex.jobs) files.push_back(run::RunDir(sub.run_dir).result_file(j.id));
  return files;
}

}  // namespace

scheduler::CalibrateOutcome calibrate_on_slurm(const SlurmCalibrateOptions& o, const SlurmCli& cli,
                                               std::ostream& out) {
  if (o.steps < 3 || o.steps > 100000) throw std::invalid_argument("--steps: must be in [3, 100000]");
  // A model that cannot be built is refused here, as by `gridrun calibrate` and `submit`, before
  // anything is queued (built by the gridrun-train next to this gridrun; model_check.hpp).
  jobs::LoadOptions lo;
  lo.check_model_file = scheduler::model_checker(scheduler::default_train_bin()).callback();
  const jobs::Expansion ex = jobs::load_grid(o.grid_file, lo);
  for (const auto& j : ex.jobs) {
    if (j.params.task != jobs::Task::train)
      throw std::invalid_argument(o.grid_file + ": job " + j.id +
                                  " is task=" + base::to_string(j.params.task) +
                                  "; calibration predicts training jobs only");
  }
  const run::RunDir rd = run::RunDir::for_grid(o.out_dir, ex.name);
  fs::create_directories(rd.root());
  const fs::path cal_root = fs::absolute(fs::path(rd.root()) / "calibration");
  std::error_code ec;
  fs::remove_all(cal_root, ec);  // ours alone: earlier calibration runs
  fs::create_directories(cal_root);
  std::vector<std::size_t> reps;
  std::map<std::string, std::size_t> rep_of;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i)
    if (rep_of.emplace(scheduler::config_key(ex.jobs[i].params), i).second) reps.push_back(i);
  out << "calibrate " << ex.name << " through Slurm: " << reps.size() << " configuration(s) of "
      << ex.jobs.size() << " jobs, " << o.steps << " timed steps each, one submission at a time\n";

  const auto t0 = Clock::now();
  scheduler::CalibrateOutcome res;
  scheduler::Calibration& c = res.cal;
  c.host = "slurm";
  c.train_bin = o.script.train_bin;
  c.build = scheduler::build_fingerprint(o.script.train_bin);
  c.created = base::iso_now();
  for (std::size_t k = 0; k < reps.size(); ++k) {
    const jobs::JobParams& params = ex.jobs[reps[k]].params;
    const std::string key = scheduler::config_key(params);
    c.labels[key] = scheduler::config_label(params);
    std::string why;
    const auto files = submit_and_wait(cal_root.string(), ex.name + "-cal-" + key,
                                       {scheduler::calibration_params(params, o.steps, 0)}, o, cli, why);
    const auto f =
        why.empty() ? scheduler::figures_from_file(
                          files.at(0), scheduler::FigureOptions{params.timing_warmup_steps}, c.versions, why)
                    : std::nullopt;
    if (!f) {
      out << "  [" << (k + 1) << "/" << reps.size() << "] " << c.labels[key] << ": " << why << "\n";
      ++res.failed;
      continue;
    }
    c.alone[key] = *f;
    out << "  [" << (k + 1) << "/" << reps.size() << "] " << c.labels[key]
        << " alone: " << scheduler::describe_alone(*f) << "\n";
  }
  if (!o.cluster_file.empty()) {
    scheduler::RunOptions ro;
    ro.grid = o.grid_file;
    ro.out = o.out_dir;
    ro.policy = o.policy;
    ro.resources.cluster_file = o.cluster_file;
    std::ostringstream log;
    int tag = 1;
    for (const auto& members : scheduler::predicted_groups(ro, c, log)) {
      std::vector<std::string> keys;
      for (std::size_t m : members) keys.push_back(scheduler::config_key(ex.jobs[m].params));
      const auto run = scheduler::plan_group_run(c, keys, o.steps, o.group_train_s);
      if (!run) continue;
      const double spent = std::chrono::duration<double>(Clock::now() - t0).count();
      if (spent + run->longest_s > o.group_budget_s) {
        res.skipped.push_back(run->label);
        continue;
      }
      std::vector<jobs::JobParams> ps;
      for (std::size_t m = 0; m < members.size(); ++m)
        ps.push_back(scheduler::calibration_params(ex.jobs[members[m]].params, run->steps[m],
                                                   std::int64_t{1000} * tag + static_cast<std::int64_t>(m)));
      std::string why;
      const auto files =
          submit_and_wait(cal_root.string(), ex.name + "-cal-group" + std::to_string(tag), ps, o, cli, why);
      ++tag;
      scheduler::CalibrationGroup g;
      for (std::size_t m = 0; m < files.size() && why.empty(); ++m) {
        const auto f = scheduler::figures_from_file(
            files[m], scheduler::FigureOptions{ps[m].timing_warmup_steps, std::nan(""), true}, c.versions,
            why);
        if (f && !g.figures.count(keys[m])) g.figures[keys[m]] = *f;
      }
      if (!why.empty()) {
        out << "  side by side: " << run->label << ": " << why << "\n";
        ++res.failed;
        continue;
      }
      g.members = keys;
      std::sort(g.members.begin(), g.members.end());
      out << "  side by side: " << run->label << ": " << scheduler::describe_group(c, g) << "\n";
      c.groups.push_back(std::move(g));
    }
  }
  c.cost_s = std::chrono::duration<double>(Clock::now() - t0).count();
  res.file = rd.calibration_file();
  res.budget_s = c.cost_s;
  scheduler::write_calibration(res.file, c);
  return res;
}

}  // namespace gridrun::slurm
