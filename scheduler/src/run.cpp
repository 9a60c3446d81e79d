// `gridrun run` as a library call: validation, the plan (--dry-run, --simulate) and the real run
// through RunLoop (run_loop.hpp). See run.hpp for the sequence and docs/scheduler.md for the
// user-facing behaviour.
#include "gridrun/scheduler/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "gridrun/base/host.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/scheduler/executor.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "run_loop.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

std::string default_train_bin() {
  const std::string self = base::self_exe();
  if (!self.empty()) {
    const fs::path cand = fs::path(self).parent_path() / "gridrun-train";
    if (::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "gridrun-train";
}

namespace {

void check_options(const RunOptions& o) {
  if (o.retries < 0 || o.retries > 100) throw std::invalid_argument("--retries: must be in [0, 100]");
  if (!o.rerun.empty() && o.rerun != "failed" && o.rerun != "all" && o.rerun.rfind("phase=", 0) != 0)
    throw std::invalid_argument("--rerun: expected 'failed', 'all' or 'phase=VALUE', got '" + o.rerun + "'");
  make_placement(o.policy);  // throws on an unknown name
}

// GPU sharing: each GPU becomes `slots` slots, the lcm of the jobs' jobs_per_gpu values; a job
// sharing a GPU by k needs slots/k of them.
int gpu_slots(const jobs::Expansion& ex, std::vector<int>& share) {
  share.assign(ex.jobs.size(), 1);
  int slots = 1;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    share[i] = static_cast<int>(ex.jobs[i].params.jobs_per_gpu);
    if (request_for(ex.jobs[i]).gpus > 0) slots = std::lcm(slots, share[i]);
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

// Everything is validated here, before the disk is touched (bad input: std::invalid_argument).
GridPlan plan_grid(const RunOptions& o, std::ostream& out) {
  check_options(o);
  GridPlan plan;
  plan.ex = jobs::load_grid(o.grid);
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
  check_feasible(ex.jobs, plan.cluster);
  for (const auto& w : ex.warnings) out << "warning: " << w << "\n";
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    plan.phase.push_back(run::phase_of(ex, i));
    if (std::find(plan.phase_order.begin(), plan.phase_order.end(), plan.phase[i]) == plan.phase_order.end())
      plan.phase_order.push_back(plan.phase[i]);
    Request r = request_for(ex.jobs[i]);
    r.gpus *= slots / plan.share[i];  // a whole GPU is `slots` slots
    plan.req.push_back(r);
  }
  if (o.rerun.rfind("phase=", 0) == 0) {
    const std::string value = o.rerun.substr(6);
    std::string known;
    for (const auto& p : plan.phase_order) known += (known.empty() ? "" : ", ") + p;
    if (ex.compare_by.empty())
      throw std::invalid_argument("--rerun " + o.rerun +
                                  ": the grid has no compare: {by: KEY}, so no phases");
    if (std::find(plan.phase_order.begin(), plan.phase_order.end(), value) == plan.phase_order.end())
      throw std::invalid_argument("--rerun " + o.rerun + ": no phase " + ex.compare_by + "=" + value +
                                  " in this grid (phases: " + known + ")");
  }
  return plan;
}

// --dry-run and --simulate: the simulated schedule, and for --dry-run the first commands.
RunOutcome print_plan(const GridPlan& plan, const RunOptions& o, std::ostream& out) {
  const jobs::Expansion& ex = plan.ex;
  const Cluster& cluster = plan.cluster;
  const run::RunDir rd = run::RunDir::for_grid(o.out, ex.name);
  std::vector<SimJob> sims(ex.jobs.size());
  std::size_t from_results = 0;
  std::map<std::string, double> measured;
  std::error_code ec;
  if (fs::is_directory(rd.results_dir(), ec)) {
    results::ResultsFolder folder(rd.results_dir());
    measured = measured_durations(folder, ex.jobs);
  }
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    bool fr = false;
    sims[i].id = ex.jobs[i].id;
    sims[i].req = plan.req[i];
    sims[i].duration_s = estimate_for(ex.jobs[i], measured, o.cost, &fr);
    sims[i].phase = plan.phase[i];
    from_results += fr;
  }
  const SimResult sim = simulate(cluster, sims, SimOptions{o.policy, o.max_parallel});
  out << (o.dry_run ? "dry run" : "simulation") << " of " << ex.name << ": " << ex.jobs.size()
      << " jobs, policy " << o.policy << ", " << cluster.source << " (" << cluster.nodes.size() << " nodes, "
      << cluster.total_cores() << " cores, " << cluster.total_gpus() << " GPUs)\n"
      << "durations: " << from_results << " from previous results, " << (ex.jobs.size() - from_results)
      << " from the cost model (see docs/scheduler.md)\n";
  out << render_schedule(cluster, sims, sim, o.width, o.timeline_rows);
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
      s.train_bin = o.train_bin.empty() ? default_train_bin() : o.train_bin;
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
  RunLoop loop(plan, o, train, out);
  return loop.run();
}

}  // namespace gridrun::scheduler
