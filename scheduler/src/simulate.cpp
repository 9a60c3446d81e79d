// Event-driven simulation over the placement engine, the cost model, and the schedule printout.
#include "gridrun/scheduler/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <queue>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "idle_places.hpp"

namespace gridrun::scheduler {

double model_forward_flops(const std::string& model) {
  // Forward FLOPs per sample at the runner's input shapes (3x32x32 images, 1x28x28 for MNIST-style
  // models, short token sequences for the transformer). Approximate analytic counts, multiply-add =
  // 2 FLOPs; good to ~20 %, which is enough to order and pack jobs.
  static const std::map<std::string, double> table{
      {"mlp", 3.4e6},      {"lenet", 1.3e6}, {"alexnet", 9.0e7}, {"resnet18", 1.11e9},
      {"resnet50", 2.6e9}, {"vgg11", 3.1e8}, {"vgg16", 6.3e8},   {"transformer", 2.0e7}};
  auto it = table.find(model);
  return it == table.end() ? 0.0 : it->second;
}

std::string script_cost_key(const jobs::JobParams& p) {
  return p.model_sha256 + "|" + p.dataset + "|" + p.data_dir + "|" + p.data_file + "|" + p.input;
}

double estimate_seconds(const jobs::JobParams& p, const CostModel& m) {
  double train = static_cast<double>(p.train_samples), test = static_cast<double>(p.test_samples);
  if (train <= 0 || test <= 0) {
    double dtrain = 10000, dtest = 1000;
    if (p.dataset == "synthetic") {
      dtrain = 4096;
      dtest = 1024;
    }
    if (p.dataset == "cifar10") {
      dtrain = 50000;
      dtest = 10000;
    }
    if (p.dataset == "mnist" || p.dataset == "fashion-mnist") {
      dtrain = 60000;
      dtest = 10000;
    }
    if (train <= 0) train = dtrain;
    if (test <= 0) test = dtest;
  }
  const double epochs = static_cast<double>(std::max<std::int64_t>(p.epochs, 0));
  double samples = epochs * train;
  if (p.max_steps > 0) {
    const double by_steps =
        static_cast<double>(p.max_steps) * static_cast<double>(std::max<std::int64_t>(p.global_batch, 1));
    samples = epochs > 0 ? std::min(samples, by_steps) : by_steps;
  }
  double fwd = model_forward_flops(p.model);
  if (jobs::model_kind(p) == jobs::ModelKind::file)
    if (const auto it = m.script_flops.find(script_cost_key(p)); it != m.script_flops.end()) fwd = it->second;
  if (!(fwd > 0) || !std::isfinite(fwd)) fwd = 1e8;  // unknown model: assume a mid-sized CNN
  double evals = p.eval_every > 0
                     ? std::max(1.0, std::floor(std::max(epochs, 1.0) / static_cast<double>(p.eval_every)))
                     : 0;
  double flops = p.task == jobs::Task::inference ? fwd * test : fwd * samples * 3.0 + fwd * test * evals;
  const jobs::Footprint fp = jobs::footprint(p);
  const double rate = fp.gpu()
                          ? m.gpu_gflops * static_cast<double>(std::max<std::int64_t>(fp.gpus, 1))
                          : m.cpu_gflops_per_core * static_cast<double>(std::max<std::int64_t>(fp.cores, 1));
  // Finite and > 0 whatever the inputs (the command line checks the rates > 0; a model's own FLOPs
  // count comes from gridrun-train's output): engine_seconds clamps, and takes NaN as its longest.
  return std::max(engine_seconds(m.startup_s + flops / (std::max(rate, 1e-3) * 1e9)), 1e-3);
}

SimResult simulate(const Cluster& cluster, const std::vector<SimJob>& jobs, const SimOptions& opts) {
  {
    int max_cores = 0, max_gpus = 0;
    for (const auto& n : cluster.nodes) {
      max_cores = std::max(max_cores, static_cast<int>(n.cores.size()));
      max_gpus = std::max(max_gpus, static_cast<int>(n.gpus.size()));
    }
    for (const auto& j : jobs) {
      bool fits = false;
      for (const auto& n : cluster.nodes)
        if (static_cast<int>(n.gpus.size()) >= j.req.gpus &&
            static_cast<int>(n.cores.size()) >= j.req.cores) {
          fits = true;
          break;
        }
      if (!fits) throw std::invalid_argument("job " + j.id + " (" + describe(j.req) + ") fits on no node");
    }
  }
  // Every duration finite and in the engine's range before the clock starts (issue 45: a NaN
  // duration made a NaN end time, which never compared as reached, and the loop below spun
  // forever). A NaN has no sane value to clamp to: it is an estimate that was never made.
  std::vector<double> duration(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (std::isnan(jobs[i].duration_s))
      throw std::invalid_argument("simulate: job " + jobs[i].id + " has no duration (not a number)");
    duration[i] = engine_seconds(jobs[i].duration_s);
  }
  SimResult r;
  r.placements.resize(jobs.size());
  // Phases in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::size_t> phase_index;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto ins = phase_index.emplace(jobs[i].phase, order.size());
    if (ins.second) {
      order.push_back(jobs[i].phase);
      r.phases.push_back(PhaseFigures{});
      r.phases.back().value = jobs[i].phase;
    }
    r.phases[ins.first->second].jobs.push_back(i);
  }
  Engine engine(cluster, EngineOptions{opts.policy, opts.max_parallel});
  // The simulated warm workers: a job is placed where one of its process waits (the engine's
  // preference, as in `gridrun run`), and takes it when it starts there.
  IdlePlaces idle([&](std::size_t k) { return jobs[k].launch_key; });
  if (opts.warm) engine.set_preference(&idle);
  const double cap_g = cluster.total_gpus(), cap_c = cluster.total_cores();
  double t = 0, busy_g_total = 0, busy_c_total = 0;
  using Ev = std::pair<double, std::size_t>;  // (end time, job)
  std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> ends;
  for (auto& ph : r.phases) {
    ph.start_s = t;
    for (std::size_t i : ph.jobs) {
      const SimJob& j = jobs[i];
      engine.submit(QueuedJob{i, i, j.req, j.est_s >= 0 ? j.est_s : duration[i]});
    }
    double busy_g = 0, busy_c = 0;
    auto launch = [&](double now) {
      idle.expire_before(now - opts.worker_idle_s);
      for (auto& s : engine.schedule(now)) {
        const SimJob& j = jobs[s.key];
        const bool warm = opts.warm && idle.take(j.launch_key, s.alloc);
        const double d = warm ? std::max(0.0, duration[s.key] - j.warm_saving_s) : duration[s.key];
        auto& p = r.placements[s.key];
        p.start_s = now;
        p.end_s = now + d;
        p.warm = warm;
        p.alloc = std::move(s.alloc);
        busy_g += j.req.gpus * j.req.nodes * d;
        busy_c += j.req.cores * j.req.nodes * d;
        ends.emplace(p.end_s, s.key);
      }
    };
    launch(t);
    // Progress guard: every round moves the clock forward (or keeps it) and ends at least one job,
    // so a phase takes at most as many rounds as it has jobs. Anything else is a bug that would
    // otherwise spin without end: a clear error instead.
    std::size_t rounds = 0;
    while (!ends.empty()) {
      const double next = ends.top().first;
      if (!(next >= t) || !std::isfinite(next) || ++rounds > ph.jobs.size())
        throw std::logic_error("simulate: the clock does not advance (at " + std::to_string(t) +
                               " s, next end " + std::to_string(next) + " s, round " +
                               std::to_string(rounds) + " of " + std::to_string(ph.jobs.size()) + " jobs)");
      t = next;
      while (!ends.empty() && ends.top().first <= t) {
        engine.finish(ends.top().second);
        if (opts.warm) idle.add(jobs[ends.top().second].launch_key, r.placements[ends.top().second].alloc, t);
        ends.pop();
      }
      launch(t);
    }
    if (engine.pending() > 0) throw std::logic_error("simulate: jobs left pending with an idle cluster");
    ph.end_s = t;
    ph.makespan_s = t - ph.start_s;
    ph.gpu_util = cap_g > 0 && ph.makespan_s > 0 ? busy_g / (cap_g * ph.makespan_s) : 0;
    ph.core_util = cap_c > 0 && ph.makespan_s > 0 ? busy_c / (cap_c * ph.makespan_s) : 0;
    busy_g_total += busy_g;
    busy_c_total += busy_c;
  }
  r.makespan_s = t;
  r.gpu_util = cap_g > 0 && t > 0 ? busy_g_total / (cap_g * t) : 0;
  r.core_util = cap_c > 0 && t > 0 ? busy_c_total / (cap_c * t) : 0;
  return r;
}

std::string render_schedule(const Cluster& cluster, const std::vector<SimJob>& jobs, const SimResult& r,
                            int width, int max_rows) {
  std::ostringstream os;
  char line[256];
  const bool gpu = cluster.total_gpus() > 0;
  std::snprintf(line, sizeof line, "makespan %s, %s on %s, utilization %s %.0f %%\n",
                base::format_duration(r.makespan_s).c_str(),
                base::counted("job", static_cast<long long>(jobs.size())).c_str(),
                base::counted("node", static_cast<long long>(cluster.nodes.size())).c_str(),
                gpu ? "GPUs" : "cores", 100.0 * (gpu ? r.gpu_util : r.core_util));
  os << line;
  if (r.phases.size() > 1 || (!r.phases.empty() && !r.phases[0].value.empty())) {
    for (const auto& ph : r.phases) {
      std::snprintf(line, sizeof line, "  phase %-16s %3zu jobs  makespan %-8s utilization %.0f %%\n",
                    ph.value.c_str(), ph.jobs.size(), base::format_duration(ph.makespan_s).c_str(),
                    100.0 * (gpu ? ph.gpu_util : ph.core_util));
      os << line;
    }
  }
  // Timeline: one row per job in start order; bar scaled to the makespan.
  std::vector<std::size_t> idx(jobs.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return r.placements[a].start_s < r.placements[b].start_s;
  });
  const int label_w = 47;  // "  id(12) node(10) res(12) dur(6) |"
  const int bar_w = std::max(10, std::min(width, 100) - label_w - 1);
  os << "timeline (start order; bar spans 0 .. " << base::format_duration(r.makespan_s) << ")\n";
  int rows = 0;
  for (std::size_t i : idx) {
    if (rows == max_rows) {
      os << "  ... " << (idx.size() - static_cast<std::size_t>(rows)) << " more jobs\n";
      break;
    }
    const auto& p = r.placements[i];
    std::string where = nodes_string(cluster, p.alloc);
    if (where.size() > 10) where = where.substr(0, 10);
    std::string res = p.alloc.node >= 0 ? (jobs[i].req.gpus ? "gpu " + gpus_string(cluster, p.alloc)
                                                            : "cpu " + cores_string(cluster, p.alloc))
                                        : "";
    if (res.size() > 12) res = res.substr(0, 11) + "+";
    std::string bar(static_cast<std::size_t>(bar_w), ' ');
    if (r.makespan_s > 0) {
      int a = static_cast<int>(std::floor(p.start_s / r.makespan_s * bar_w));
      int b = static_cast<int>(std::ceil(p.end_s / r.makespan_s * bar_w));
      a = std::clamp(a, 0, bar_w - 1);
      b = std::clamp(b, a + 1, bar_w);
      for (int k = a; k < b; ++k) bar[static_cast<std::size_t>(k)] = '#';
    }
    std::snprintf(line, sizeof line, "  %-12.12s %-10s %-12s %6s |%s|\n", jobs[i].id.c_str(), where.c_str(),
                  res.c_str(), base::format_duration(p.end_s - p.start_s).c_str(), bar.c_str());
    os << line;
    ++rows;
  }
  return os.str();
}

}  // namespace gridrun::scheduler
