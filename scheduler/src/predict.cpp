// The calibrated schedule of a planned grid (see predict.hpp).
#include "predict.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "gridrun/jobs/footprint.hpp"

namespace gridrun::scheduler {

namespace {

// For every job, the config keys of the jobs of its phase running when it starts (itself
// included), sorted: one sweep per phase in start order, so a grid of n jobs costs n log n plus
// the groups' sizes instead of n x n.
std::vector<std::vector<std::string>> running_at_start(const std::vector<std::string>& keys,
                                                       const SimResult& r) {
  std::vector<std::vector<std::string>> groups(keys.size());
  for (const auto& ph : r.phases) {
    std::vector<std::size_t> order = ph.jobs;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return r.placements[a].start_s < r.placements[b].start_s;
    });
    std::vector<std::size_t> active;
    for (std::size_t k = 0; k < order.size();) {
      const double t = r.placements[order[k]].start_s;
      active.erase(std::remove_if(active.begin(), active.end(),
                                  [&](std::size_t j) { return r.placements[j].end_s <= t; }),
                   active.end());
      const std::size_t first = k;
      for (; k < order.size() && r.placements[order[k]].start_s == t; ++k) active.push_back(order[k]);
      std::vector<std::string> group;
      for (std::size_t j : active) group.push_back(keys[j]);
      std::sort(group.begin(), group.end());
      for (std::size_t m = first; m < k; ++m) groups[order[m]] = group;
    }
  }
  return groups;
}

const StepFigures* group_figures(const Calibration& cal, const std::vector<std::string>& group,
                                 const std::string& key) {
  const CalibrationGroup* same_size = nullptr;
  const CalibrationGroup* largest = nullptr;
  for (const auto& g : cal.groups) {
    if (!g.figures.count(key)) continue;
    if (g.members == group) return &g.figures.at(key);
    if (!same_size && g.members.size() == group.size()) same_size = &g;
    if (!largest || g.members.size() > largest->members.size()) largest = &g;
  }
  if (same_size) return &same_size->figures.at(key);
  return largest ? &largest->figures.at(key) : nullptr;
}

int max_running(const std::vector<std::size_t>& members, const SimResult& r) {
  std::vector<std::pair<double, int>> ev;
  for (std::size_t i : members) {
    ev.emplace_back(r.placements[i].start_s, 1);
    ev.emplace_back(r.placements[i].end_s, -1);
  }
  std::sort(ev.begin(), ev.end());  // an end before a start at the same time
  int now = 0, most = 0;
  for (const auto& e : ev) most = std::max(most, now += e.second);
  return most;
}

// What a job saves when it starts in a warm worker: its cold launch and exit tail, less a warm
// job's set-up; 0 when the calibration did not measure the latter (as cold).
double warm_saving(const StepFigures& f) {
  return std::isfinite(f.warm_launch_s) ? std::max(0.0, f.launch_s + f.tail_s - f.warm_launch_s) : 0.0;
}

}  // namespace

std::vector<std::vector<std::string>> side_by_side_groups(const GridPlan& plan, const SimResult& r) {
  std::vector<std::string> keys;
  for (const auto& j : plan.ex.jobs) keys.push_back(config_key(j.params));
  std::map<std::vector<std::string>, int> count;
  std::vector<std::vector<std::string>> order;
  for (auto& g : running_at_start(keys, r)) {
    if (g.size() < 2) continue;
    if (count[g]++ == 0) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return count[a] > count[b]; });
  return order;
}

PredictedGrid predict_grid(const GridPlan& plan, const Calibration& cal, const CostModel& cost,
                           const PredictOptions& opts) {
  PredictedGrid g;
  const auto& jobs = plan.ex.jobs;
  std::vector<std::string> keys;
  g.jobs.resize(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    keys.push_back(config_key(jobs[i].params));
    SimJob& s = g.jobs[i];
    s.id = jobs[i].id;
    s.req = plan.req[i];
    s.phase = plan.phase[i];
    const auto it = cal.alone.find(keys[i]);
    s.duration_s = it != cal.alone.end() ? predict_seconds(jobs[i].params, it->second)
                                         : estimate_seconds(jobs[i].params, cost);
    s.launch_key = jobs::process_key(jobs[i].params).text();
    if (it != cal.alone.end()) s.warm_saving_s = warm_saving(it->second);
  }
  const SimResult first = simulate(plan.cluster, g.jobs, opts.sim);
  const auto at_start = running_at_start(keys, first);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!cal.alone.count(keys[i])) {
      ++g.uncalibrated;
      continue;
    }
    const auto& group = at_start[i];
    const StepFigures* f = group.size() > 1 ? group_figures(cal, group, keys[i]) : nullptr;
    if (f) {
      // Speeds from the group; what the job learns by when from its configuration alone (a
      // group's members run longer, past the point the target check asks about).
      StepFigures side = *f;
      const StepFigures& alone = cal.alone.at(keys[i]);
      side.final_acc = alone.final_acc;
      side.acc_steps = alone.acc_steps;
      side.learn_key = alone.learn_key;
      g.jobs[i].duration_s = predict_seconds(jobs[i].params, side);
      g.jobs[i].warm_saving_s = warm_saving(side);
      ++g.grouped;
    } else {
      ++g.alone;
    }
  }
  g.result = simulate(plan.cluster, g.jobs, opts.sim);
  g.record = prediction_record(g.jobs, g.result,
                               RecordInfo{g.uncalibrated == 0             ? "calibration"
                                          : g.uncalibrated == jobs.size() ? "cost model"
                                                                          : "calibration and cost model",
                                          opts.sim.policy, opts.created});
  if (g.uncalibrated < jobs.size()) g.record.calibration_other_cpu_share = cal.conditions.max_other_cpu_share;
  return g;
}

run::Prediction prediction_record(const std::vector<SimJob>& jobs, const SimResult& r,
                                  const RecordInfo& info) {
  run::Prediction p;
  p.source = info.source;
  p.created = info.created;
  p.policy = info.policy;
  p.makespan_s = r.makespan_s;
  for (const auto& ph : r.phases) {
    p.phase_order.push_back(ph.value);
    run::PhasePrediction pp;
    pp.makespan_s = ph.makespan_s;
    pp.jobs = static_cast<int>(ph.jobs.size());
    pp.max_running = max_running(ph.jobs, r);
    p.phases[ph.value] = pp;
  }
  for (std::size_t i = 0; i < jobs.size(); ++i)
    p.job_seconds[jobs[i].id] = r.placements[i].end_s - r.placements[i].start_s;
  return p;
}

}  // namespace gridrun::scheduler
