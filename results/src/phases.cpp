// Phase figures of compare-by runs (see phases.hpp): derived from typed facts and the jobs'
// /summary, written and read under the same keys.
#include "gridrun/results/phases.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"

namespace gridrun::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A finite /summary figure of the job, or nullopt.
std::optional<double> figure(const JobData& job, const char* name) {
  auto it = job.summary.find(name);
  if (it == job.summary.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

}  // namespace

Phase phase_figures(const PhaseFacts& facts, const std::string& results_dir) {
  Phase p;
  p.name = facts.name;
  p.makespan_s = facts.makespan_s;
  double samples = 0, util_sum = 0;
  int util_n = 0;
  std::vector<std::string> names;
  for (const auto& j : facts.jobs) names.push_back(j.id + ".h5");
  FolderReadOptions fo;
  fo.depth = Depth::Summary;
  const auto reads = read_job_files(results_dir, names, fo);
  for (std::size_t k = 0; k < facts.jobs.size(); ++k) {
    const auto& j = facts.jobs[k];
    p.jobs.push_back(j.id);
    if (!reads[k].ok) continue;  // a failed job has no figures; the phase still records its makespan
    const JobData& data = reads[k].data;
    if (auto s = figure(data, "samples")) samples += *s;
    if (auto u = figure(data, j.gpu ? "gpu_util_pct_mean" : "cpu_util_pct_mean")) {
      util_sum += *u / 100.0;
      ++util_n;
    }
  }
  const double m = facts.makespan_s;
  p.samples = samples;
  p.samples_per_s = m > 0 ? samples / m : 0;
  p.alloc_util = m > 0 && facts.capacity > 0 ? facts.busy_resource_s / (facts.capacity * m) : 0;
  p.util_mean = util_n > 0 ? util_sum / util_n : p.alloc_util;
  return p;
}

base::Json phase_to_json(const Phase& p) {
  return base::Json{{"makespan_s", p.makespan_s}, {"samples_per_s", p.samples_per_s},
                    {"util_mean", p.util_mean},   {"alloc_util", p.alloc_util},
                    {"samples", p.samples},       {"jobs", p.jobs}};
}

Phase phase_from_json(const std::string& name, const base::Json& v) {
  Phase p;
  p.name = name;
  auto num = [&](const char* k) {
    auto x = v.find(k);
    return x != v.end() && x->is_number() ? x->get<double>() : kNaN;
  };
  p.makespan_s = num("makespan_s");
  p.samples_per_s = num("samples_per_s");
  p.util_mean = num("util_mean");
  p.alloc_util = num("alloc_util");
  p.samples = num("samples");
  if (auto jobs = v.find("jobs"); jobs != v.end() && jobs->is_array())
    for (const auto& id : *jobs)
      if (id.is_string()) p.jobs.push_back(id.get<std::string>());
  return p;
}

namespace {

// When a job started and ended, in seconds since the epoch: start_unix/end_unix (sub-second),
// else the whole seconds of start_time/end_time (files written before those existed).
std::optional<double> job_time(const JobData& d, const char* unix_attr, const std::string& iso) {
  const double v = d.attr_number(unix_attr, kNaN);
  if (std::isfinite(v)) return v;
  if (const auto t = base::parse_iso_time(iso)) return static_cast<double>(*t);
  return std::nullopt;
}

}  // namespace

std::vector<Phase> complete_phases(std::vector<Phase> recorded, const std::vector<const JobData*>& jobs) {
  std::map<std::string, std::vector<std::reference_wrapper<const JobData>>> by_phase;
  std::vector<std::string> order;
  for (const JobData* j : jobs) {
    const std::string phase = j->attr_string("meta.phase");
    if (phase.empty()) continue;
    if (!by_phase.count(phase)) order.push_back(phase);
    by_phase[phase].push_back(std::cref(*j));
  }
  if (recorded.empty()) {
    std::vector<std::pair<double, Phase>> derived;  // (first start, phase): they ran in that order
    for (const auto& name : order) {
      Phase p;
      p.name = name;
      double first = kNaN, last = kNaN, samples = 0, util_sum = 0;
      int util_n = 0;
      for (const JobData& d : by_phase[name]) {
        p.jobs.push_back(d.id);
        const auto start = job_time(d, "start_unix", d.start_time), end = job_time(d, "end_unix", d.end_time);
        if (start) first = std::isnan(first) ? *start : std::min(first, *start);
        if (end) last = std::isnan(last) ? *end : std::max(last, *end);
        if (auto v = figure(d, "samples")) samples += *v;
        const bool gpu = d.params && d.params->device == "gpu";
        if (auto u = figure(d, gpu ? "gpu_util_pct_mean" : "cpu_util_pct_mean")) {
          util_sum += *u / 100.0;
          ++util_n;
        }
      }
      p.makespan_s = last - first;
      p.samples = samples;
      p.samples_per_s = p.makespan_s > 0 ? samples / p.makespan_s : kNaN;
      p.util_mean = util_n > 0 ? util_sum / util_n : kNaN;
      derived.emplace_back(first, p);
    }
    std::stable_sort(derived.begin(), derived.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& d : derived) recorded.push_back(std::move(d.second));
  }
  for (auto& p : recorded) {
    auto it = by_phase.find(p.name);
    if (it == by_phase.end() || it->second.empty()) continue;
    double first = kNaN, reached = 0;
    bool all = true;
    for (const JobData& d : it->second)
      if (const auto start = job_time(d, "start_unix", d.start_time))
        first = std::isnan(first) ? *start : std::min(first, *start);
    for (const JobData& d : it->second) {
      const auto start = job_time(d, "start_unix", d.start_time);
      const auto ttt = figure(d, "time_to_target_s");
      if (!start || !ttt || std::isnan(first)) {
        all = false;
        break;
      }
      reached = std::max(reached, *start - first + *ttt);
    }
    if (all) p.time_to_target_s = reached;
  }
  return recorded;
}

std::vector<Phase> read_phases(const std::string& state_json) {
  std::vector<Phase> out;
  const std::optional<std::string> text = base::try_read_file(state_json);
  if (!text) return out;
  const base::Json root = base::parse_json(*text, state_json);
  auto phases = root.find("phases");
  if (phases == root.end() || !phases->is_object()) return out;
  for (const auto& [name, v] : phases->items()) out.push_back(phase_from_json(name, v));
  return out;
}

}  // namespace gridrun::results
