// The calibrated schedule of a planned grid (see predict.hpp).
#include "predict.hpp"

#include <algorithm>
#include <map>

namespace gridrun::scheduler {

namespace {

// Config keys of the jobs of the same phase running when job `i` starts (itself included), sorted.
std::vector<std::string> running_at_start(const GridPlan& plan, const std::vector<std::string>& keys,
                                          const SimResult& r, std::size_t i) {
  std::vector<std::string> group;
  const double t = r.placements[i].start_s;
  for (std::size_t j = 0; j < keys.size(); ++j)
    if (plan.phase[j] == plan.phase[i] && r.placements[j].start_s <= t && t < r.placements[j].end_s)
      group.push_back(keys[j]);
  std::sort(group.begin(), group.end());
  return group;
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

}  // namespace

std::vector<std::vector<std::string>> side_by_side_groups(const GridPlan& plan,
                                                          const std::vector<SimJob>& jobs,
                                                          const SimResult& r) {
  std::vector<std::string> keys;
  for (const auto& j : plan.ex.jobs) keys.push_back(config_key(j.params));
  std::map<std::vector<std::string>, int> count;
  std::vector<std::vector<std::string>> order;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto g = running_at_start(plan, keys, r, i);
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
  }
  const SimResult first = simulate(plan.cluster, g.jobs, opts.sim);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!cal.alone.count(keys[i])) {
      ++g.uncalibrated;
      continue;
    }
    const auto group = running_at_start(plan, keys, first, i);
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
      ++g.grouped;
    } else {
      ++g.alone;
    }
  }
  g.result = simulate(plan.cluster, g.jobs, opts.sim);
  run::Prediction& p = g.record;
  p.source = g.uncalibrated == 0             ? "calibration"
             : g.uncalibrated == jobs.size() ? "cost model"
                                             : "calibration and cost model";
  p.created = opts.created;
  p.policy = opts.sim.policy;
  p.makespan_s = g.result.makespan_s;
  for (const auto& ph : g.result.phases) {
    p.phase_order.push_back(ph.value);
    run::PhasePrediction pp;
    pp.makespan_s = ph.makespan_s;
    pp.jobs = static_cast<int>(ph.jobs.size());
    pp.max_running = max_running(ph.jobs, g.result);
    p.phases[ph.value] = pp;
  }
  for (std::size_t i = 0; i < jobs.size(); ++i)
    p.job_seconds[jobs[i].id] = g.result.placements[i].end_s - g.result.placements[i].start_s;
  return g;
}

}  // namespace gridrun::scheduler
