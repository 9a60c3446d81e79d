// plan_grid (see grid_plan.hpp): the grid loaded and validated, the cluster resolved, each job's
// request and phase; nothing is written.
#include "grid_plan.hpp"

#include <algorithm>
#include <iostream>
#include <numeric>
#include <set>
#include <stdexcept>

#include "gridrun/dataset/builtin_files.hpp"
#include "gridrun/dataset/data_file.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/scheduler/model_check.hpp"
#include "gridrun/scheduler/placement.hpp"

namespace gridrun::scheduler {

namespace {

void check_options(const RunOptions& o) {
  if (o.retries < 0 || o.retries > 100) throw std::invalid_argument("--retries: must be in [0, 100]");
  if (!o.rerun.empty() && o.rerun != "failed" && o.rerun != "all" && o.rerun != "compare" &&
      o.rerun.rfind("phase=", 0) != 0)
    throw std::invalid_argument("--rerun: expected 'failed', 'all', 'compare' or 'phase=VALUE', got '" +
                                o.rerun + "'");
  make_placement(o.policy);  // throws on an unknown name
}

// GPU sharing: each GPU becomes `slots` slots, the lcm of the GPU jobs' shares (jobs_per_gpu); a
// job sharing a GPU by k needs slots/k of them (jobs::Footprint::gpu_slots_per_node).
int gpu_slots(const jobs::Expansion& ex, std::vector<int>& share) {
  share.assign(ex.jobs.size(), 1);
  int slots = 1;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    const jobs::Footprint fp = jobs::footprint(ex.jobs[i].params);
    share[i] = static_cast<int>(fp.gpu_share);
    if (fp.gpus > 0) slots = std::lcm(slots, share[i]);
    if (slots > 64)
      throw std::invalid_argument("jobs_per_gpu: the grid's values need " + std::to_string(slots) +
                                  " slots per GPU (at most 64; use values that divide each other)");
  }
  if (slots > 1)
    for (const auto& job : ex.jobs)
      if (request_for(job).gpus > 1)
        throw std::invalid_argument(
            "jobs_per_gpu: a grid that shares GPUs runs one-rank GPU jobs only, but job " + job.id +
            " has ranks=" + std::to_string(request_for(job).ranks) +
            " on gpu (run multi-GPU jobs in another grid)");
  return slots;
}

// model=torchscript: no table knows a user's model, so the cost model (simulate, and the order of
// an uncalibrated run) takes its forward FLOPs from the model check that loading the grid ran
// (ModelChecker: gridrun-train --count-flops, once per model content and input). A model that
// cannot be built never gets here: the grid was refused at its model_file line.
void count_script_flops(GridPlan& plan, const ModelChecker& checker) {
  for (const auto& j : plan.ex.jobs)
    if (jobs::model_kind(j.params) == jobs::ModelKind::file)
      if (const double f = checker.flops(j.params); f > 0)
        plan.cost.script_flops[script_cost_key(j.params)] = f;
}

// The command that repeats this one (grid, --set, --only), for "... --only device=cpu runs the rest".
std::string rest_command(const RunOptions& o) {
  return std::string("gridrun ") + (o.simulate ? "simulate " : "run ") + o.grid +
         run::selection_flags(o.overrides, o.only);
}

}  // namespace

// Everything is validated here, before the disk is touched (bad input: std::invalid_argument).
GridPlan plan_grid(const RunOptions& o, std::ostream& out) {
  check_options(o);
  GridPlan plan;
  jobs::LoadOptions lo;
  lo.check_data_file = dataset::check_job_data_file;  // where this machine sees the file
  ModelChecker& checker = model_checker(o.train_bin.empty() ? default_train_bin() : o.train_bin);
  lo.check_model_file = checker.callback();  // before anything is written or launched
  lo.overrides = o.overrides;
  lo.repeats = o.repeats;
  lo.warn_lost_compare = true;
  plan.ex = jobs::load_grid(o.grid, lo);
  // To stderr, as plan's: about the command line, not the grid file, and apart from a json answer.
  if (!plan.ex.compare_gone.empty()) std::cerr << "warning: " << plan.ex.compare_gone << "\n";
  if (!o.only.empty()) {
    std::vector<jobs::Job> selected = jobs::select_jobs(plan.ex.jobs, o.only);
    if (const std::string w = jobs::lost_compare_warning(plan.ex, selected, o.only); !w.empty())
      std::cerr << "warning: " << w << "\n";
    plan.whole = plan.ex;
    plan.ex.jobs = std::move(selected);
  }
  {
    // A built-in data set's files, of the jobs selected, as the data file above: refused at the grid's
    // data_dir line before anything is launched, not seconds into the first job (issue 58).
    std::set<std::pair<std::string, std::string>> used;
    for (const auto& j : plan.ex.jobs) used.emplace(j.params.dataset, j.params.data_dir);
    dataset::check_builtin_data(o.grid, lo, used);
  }
  if (!(o.exit_grace_s > 0)) throw std::invalid_argument("--exit-grace: must be > 0");
  if (o.heartbeat_timeout_s < 0) throw std::invalid_argument("--heartbeat-timeout: must be >= 0");
  const jobs::Expansion& ex = plan.ex;
  // One machine cannot run a job across hosts; refuse before anything is written or launched
  // (simulating one on a cluster file is fine: that is planning, not running).
  if (!o.simulate)
    for (const auto& j : ex.jobs)
      if (j.params.nodes > 1)
        throw std::invalid_argument(o.grid + ": job " + j.id +
                                    " has nodes=" + std::to_string(j.params.nodes) +
                                    " (its ranks span hosts). `gridrun run` runs on this machine only, so "
                                    "submit it with `gridrun submit " +
                                    o.grid + " --slurm` (or `gridrun simulate` to plan it)");
  const int slots = gpu_slots(ex, plan.share);
  ResourceOptions res_opts = o.resources;
  res_opts.jobs_per_gpu = slots;
  plan.cluster = resolve_cluster(res_opts);
  check_feasible(ex.jobs, plan.cluster, rest_command(o));
  for (const auto& w : ex.warnings) out << "warning: " << w << "\n";
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    plan.phase.push_back(run::phase_of(ex, i));
    if (std::find(plan.phase_order.begin(), plan.phase_order.end(), plan.phase[i]) == plan.phase_order.end())
      plan.phase_order.push_back(plan.phase[i]);
    // A whole GPU is `slots` slots.
    plan.req.push_back(request_for(jobs::footprint(ex.jobs[i].params), slots));
  }
  plan.cost = o.cost;
  count_script_flops(plan, checker);
  if (o.repeats > 0 && ex.compare_by.empty())
    throw std::invalid_argument("--repeats: the grid has no compare: {by: KEY}, so no phases to repeat");
  if (o.rerun == "compare" && ex.compare_by.empty())
    throw std::invalid_argument("--rerun compare: the grid has no compare: {by: KEY}, so no phases");
  if (o.rerun.rfind("phase=", 0) == 0) {
    const std::string value = o.rerun.substr(6);
    std::string known;
    for (const auto& p : plan.phase_order) known += (known.empty() ? "" : ", ") + p;
    if (ex.compare_by.empty())
      throw std::invalid_argument("--rerun " + o.rerun +
                                  ": the grid has no compare: {by: KEY}, so no phases");
    // VALUE names a phase with all its repeats, VALUE#N one repeat of it.
    const bool known_phase =
        std::any_of(plan.phase_order.begin(), plan.phase_order.end(),
                    [&](const std::string& p) { return p == value || run::split_phase(p).value == value; });
    if (!known_phase)
      throw std::invalid_argument("--rerun " + o.rerun + ": no phase " + ex.compare_by + "=" + value +
                                  " in this grid (phases: " + known + ")");
  }
  return plan;
}

}  // namespace gridrun::scheduler
