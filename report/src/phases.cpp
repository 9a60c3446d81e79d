// Phase figures of compare-by runs (see phases.hpp): derived from the recorded facts and the jobs'
// /summary.
#include "gridrun/report/phases.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::report {

using results::JobData;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A finite /summary figure of the job, or nullopt.
std::optional<double> figure(const JobData& job, const char* name) {
  auto it = job.summary.find(name);
  if (it == job.summary.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

}  // namespace

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

namespace {

// Samples and mean utilization (0-1) of a phase's jobs.
struct JobSums {
  double samples = 0, util_sum = 0;
  int util_n = 0;
  void add(const JobData& d) {
    if (auto v = figure(d, "samples")) samples += *v;
    const bool gpu = d.params && d.params->device == "gpu";
    if (auto u = figure(d, gpu ? "gpu_util_pct_mean" : "cpu_util_pct_mean")) {
      util_sum += *u / 100.0;
      ++util_n;
    }
  }
  double util_mean() const { return util_n > 0 ? util_sum / util_n : kNaN; }
};

// From the phase's first start until its last job reached the target; NaN unless all did.
double time_to_target(const std::vector<const JobData*>& members) {
  double first = kNaN, reached = 0;
  for (const JobData* d : members)
    if (const auto start = job_time(*d, "start_unix", d->start_time))
      first = std::isnan(first) ? *start : std::min(first, *start);
  if (members.empty() || std::isnan(first)) return kNaN;
  for (const JobData* d : members) {
    const auto start = job_time(*d, "start_unix", d->start_time);
    const auto ttt = figure(*d, "time_to_target_s");
    if (!start || !ttt) return kNaN;
    reached = std::max(reached, *start - first + *ttt);
  }
  return reached;
}

double first_start(const std::vector<const JobData*>& members) {
  double first = std::numeric_limits<double>::infinity();
  for (const JobData* d : members)
    if (const auto start = job_time(*d, "start_unix", d->start_time)) first = std::min(first, *start);
  return first;
}

}  // namespace

std::vector<PhaseFigures> complete_phases(const std::map<std::string, run::PhaseRecord>& recorded,
                                          const std::vector<const JobData*>& jobs) {
  // (first start, phase): phases are listed in the order they ran.
  std::vector<std::pair<double, PhaseFigures>> out;
  if (!recorded.empty()) {
    std::map<std::string, const JobData*> by_id;
    for (const JobData* j : jobs) by_id[j->id] = j;
    for (const auto& [name, rec] : recorded) {
      PhaseFigures p;
      p.name = name;
      p.jobs = rec.jobs;
      p.makespan_s = rec.makespan_s;
      std::vector<const JobData*> members;
      JobSums sums;
      for (const auto& id : rec.jobs)
        if (auto it = by_id.find(id); it != by_id.end()) {
          members.push_back(it->second);
          sums.add(*it->second);
        }
      const double m = rec.makespan_s;
      p.samples = sums.samples;
      p.samples_per_s = m > 0 ? sums.samples / m : kNaN;
      p.alloc_util = m > 0 && rec.capacity > 0 ? rec.busy_resource_s / (rec.capacity * m) : kNaN;
      p.util_mean = sums.util_n > 0 ? sums.util_mean() : p.alloc_util;
      // Every job must have reached the target; one without a readable file did not say so.
      p.time_to_target_s = members.size() == rec.jobs.size() ? time_to_target(members) : kNaN;
      out.emplace_back(std::isfinite(rec.start_unix) ? rec.start_unix : first_start(members), std::move(p));
    }
  } else {
    std::map<std::string, std::vector<const JobData*>> by_phase;
    for (const JobData* j : jobs) {
      const std::string phase = j->attr_string("meta.phase");
      if (!phase.empty()) by_phase[phase].push_back(j);
    }
    for (const auto& [name, members] : by_phase) {
      PhaseFigures p;
      p.name = name;
      double first = kNaN, last = kNaN;
      JobSums sums;
      for (const JobData* d : members) {
        p.jobs.push_back(d->id);
        const auto start = job_time(*d, "start_unix", d->start_time);
        const auto end = job_time(*d, "end_unix", d->end_time);
        if (start) first = std::isnan(first) ? *start : std::min(first, *start);
        if (end) last = std::isnan(last) ? *end : std::max(last, *end);
        sums.add(*d);
      }
      p.makespan_s = last - first;
      p.samples = sums.samples;
      p.samples_per_s = p.makespan_s > 0 ? sums.samples / p.makespan_s : kNaN;
      p.util_mean = sums.util_mean();
      p.time_to_target_s = time_to_target(members);
      out.emplace_back(first_start(members), std::move(p));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PhaseFigures> phases;
  for (auto& o : out) phases.push_back(std::move(o.second));
  return phases;
}

}  // namespace gridrun::report
