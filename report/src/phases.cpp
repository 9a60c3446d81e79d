// Phase figures of compare-by runs (see phases.hpp): derived from the recorded facts and the jobs'
// /summary.
#include "gridrun/report/phases.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/run/prepare.hpp"

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
    const bool gpu = results::device_of(d.params) == jobs::Device::gpu;
    if (auto u = figure(d, gpu ? "gpu_util_pct_mean" : "cpu_util_pct_mean")) {
      util_sum += *u / 100.0;
      ++util_n;
    }
  }
  double util_mean() const { return util_n > 0 ? util_sum / util_n : kNaN; }
};

// The GPU conditions of a phase from its jobs' /summary (phases.hpp: the worst job's figure).
void gpu_conditions(PhaseFigures& p, const std::vector<const JobData*>& members) {
  auto worst = [](double& into, double v, bool lowest) {
    into = std::isnan(into) ? v : lowest ? std::min(into, v) : std::max(into, v);
  };
  for (const JobData* d : members) {
    if (auto v = figure(*d, "gpu_foreign_share")) worst(p.gpu_foreign_share, *v, false);
    if (auto v = figure(*d, "gpu_foreign_procs_max")) worst(p.gpu_foreign_procs, *v, false);
    if (auto v = figure(*d, "gpu_throttled_share")) worst(p.gpu_throttled_share, *v, false);
    if (auto v = figure(*d, "gpu_sm_clock_share")) worst(p.gpu_sm_clock_share, *v, true);
    if (auto v = figure(*d, "gpu_throttle_reasons"); v && *v >= 0 && *v < 1e15)
      p.gpu_throttle_reasons |= static_cast<unsigned long long>(*v);
  }
}

// The other Slurm jobs its jobs' tasks saw (PhaseInput::slurm_others), distinct.
void slurm_conditions(PhaseFigures& p, const PhaseInput& in, const std::vector<const JobData*>& members) {
  std::set<std::string> seen;
  for (const JobData* d : members) {
    const auto it = in.slurm_others.find(d->id);
    if (it == in.slurm_others.end()) continue;
    p.slurm_others_known = p.slurm_others_known || it->second.known;
    seen.insert(it->second.others.begin(), it->second.others.end());
  }
  p.slurm_others.assign(seen.begin(), seen.end());
}

double first_start(const std::vector<const JobData*>& members) {
  double first = std::numeric_limits<double>::infinity();
  for (const JobData* d : members)
    if (const auto start = job_time(*d, "start_unix", d->start_time)) first = std::min(first, *start);
  return first;
}

// From the phase's first start until its last job reached the target; NaN unless all did.
double time_to_target(const std::vector<const JobData*>& members) {
  const double first = first_start(members);
  if (!std::isfinite(first)) return kNaN;
  double reached = 0;
  for (const JobData* d : members) {
    const auto start = job_time(*d, "start_unix", d->start_time);
    const auto ttt = figure(*d, "time_to_target_s");
    if (!start || !ttt) return kNaN;
    reached = std::max(reached, *start - first + *ttt);
  }
  return reached;
}

// Did two of the jobs run at the same time (their [start, end] intervals overlap)?
bool overlapped(const std::vector<const JobData*>& members) {
  std::vector<std::pair<double, double>> spans;
  for (const JobData* d : members) {
    const auto start = job_time(*d, "start_unix", d->start_time), end = job_time(*d, "end_unix", d->end_time);
    if (start && end) spans.emplace_back(*start, *end);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 1; k < spans.size(); ++k)
    if (spans[k].first < spans[k - 1].second) return true;
  return false;
}

// The sittings the jobs' attempts ran in; a Slurm requeue (restart_count > 0) is one of its own,
// because the job's time is then split around the requeue.
std::set<std::string> sittings_of(const std::vector<const JobData*>& members) {
  std::set<std::string> out;
  for (const JobData* d : members)
    for (const auto& a : d->attempts)
      if (!a.sitting.empty())
        out.insert(a.restart_count > 0 ? a.sitting + "/requeue-" + std::to_string(a.restart_count)
                                       : a.sitting);
  return out;
}

// Largest coefficient of variation of samples/s among jobs that differ only in their seed.
double seed_noise(const std::vector<const JobData*>& members) {
  std::map<std::string, std::vector<double>> by_config;
  for (const JobData* d : members) {
    const auto sps = figure(*d, "samples_per_s");
    if (!d->params || !sps) continue;
    jobs::JobParams p = *d->params;
    p.seed = 0;
    by_config[jobs::canonical_json(p)].push_back(*sps);
  }
  double worst = kNaN;
  for (const auto& [config, v] : by_config) {
    if (v.size() < 2) continue;
    double mean = 0, ss = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) ss += (x - mean) * (x - mean);
    const double cv = mean > 0 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) / mean : kNaN;
    if (std::isfinite(cv)) worst = std::isnan(worst) ? cv : std::max(worst, cv);
  }
  return worst;
}

std::string arrangement_of(const std::vector<const JobData*>& members, bool side_by_side) {
  std::vector<const jobs::JobParams*> params;
  for (const JobData* d : members) params.push_back(d->params ? &*d->params : nullptr);
  return run::arrangement_text(params, side_by_side);
}

void withhold(PhaseFigures& p, std::string why) {
  p.unmeasured = std::move(why);
  p.makespan_s = p.samples_per_s = p.util_mean = p.alloc_util = p.samples = p.time_to_target_s = kNaN;
}

}  // namespace

std::map<std::string, SlurmOthers> read_slurm_others(const run::RunDir& rd,
                                                     const std::vector<std::string>& ids) {
  std::map<std::string, SlurmOthers> out;
  for (const std::string& id : ids) {
    const auto text = base::try_read_file(rd.others_file(id), base::kinds::kSlurmOthers);
    if (!text) continue;
    SlurmOthers& o = out[id];
    // "start|end UNIX task ID" opens a listing; "job ID USER NAME" lines follow; a listing whose
    // squeue failed holds "unknown ..." instead.
    bool listing_ok = false;
    for (const std::string& line : base::split(*text, '\n')) {
      if (line.rfind("start ", 0) == 0 || line.rfind("end ", 0) == 0) {
        if (listing_ok) o.known = true;
        listing_ok = true;
      } else if (line.rfind("unknown", 0) == 0) {
        listing_ok = false;
      } else if (line.rfind("job ", 0) == 0 && line.size() > 4) {
        const std::string job = base::printable_line(line.substr(4));
        if (std::find(o.others.begin(), o.others.end(), job) == o.others.end()) o.others.push_back(job);
      }
    }
    if (listing_ok) o.known = true;
  }
  return out;
}

TimeSplit time_split(const JobData& d) {
  TimeSplit t;
  const auto launched = figure(d, "launched_unix"), proc = figure(d, "process_start_unix");
  const auto first = figure(d, "first_step_unix"), end = figure(d, "finished_unix");
  const std::optional<double> from = launched ? launched : proc;
  if (from && first) t.launch_s = *first - *from;
  if (from && end) t.total_s = *end - *from;
  if (auto v = figure(d, "time_train_s")) t.train_s = *v;
  if (auto v = figure(d, "time_eval_s")) t.eval_s = *v;
  if (auto v = figure(d, "time_checkpoint_s")) t.checkpoint_s = *v;
  if (d.params) {
    t.resources = static_cast<double>(std::max<std::int64_t>(jobs::footprint(*d.params).units(), 1));
  }
  return t;
}

TimeSummary summarize_times(const std::vector<TimeSplit>& splits) {
  TimeSummary out;
  struct Mean {
    double sum = 0;
    int n = 0;
    void add(double v) {
      if (std::isfinite(v)) sum += v, ++n;
    }
    double get() const { return n > 0 ? sum / n : kNaN; }
  } wait, launch, train, eval, ckpt, total;
  double w_launch = 0, w_total = 0;
  for (const auto& t : splits) {
    wait.add(t.wait_s);
    launch.add(t.launch_s);
    train.add(t.train_s);
    eval.add(t.eval_s);
    ckpt.add(t.checkpoint_s);
    total.add(t.total_s);
    if (std::isfinite(t.launch_s) && std::isfinite(t.total_s)) {
      w_launch += t.launch_s * t.resources;
      w_total += t.total_s * t.resources;
      ++out.jobs;
    }
  }
  out.mean.wait_s = wait.get();
  out.mean.launch_s = launch.get();
  out.mean.train_s = train.get();
  out.mean.eval_s = eval.get();
  out.mean.checkpoint_s = ckpt.get();
  out.mean.total_s = total.get();
  out.launch_share = w_total > 0 ? w_launch / w_total : kNaN;
  return out;
}

std::vector<PhaseFigures> complete_phases(const PhaseInput& in, const std::vector<const JobData*>& jobs) {
  std::map<std::string, std::vector<const JobData*>> by_phase;
  for (const JobData* j : jobs) {
    const std::string phase = j->attr_string("meta.phase");
    if (!phase.empty()) by_phase[phase].push_back(j);
  }
  for (const auto& [name, rec] : in.recorded) by_phase[name];  // a recorded phase without files
  // (first start, phase): phases are listed in the order they ran.
  std::vector<std::pair<double, PhaseFigures>> out;
  for (const auto& [name, members] : by_phase) {
    PhaseFigures p;
    p.name = name;
    p.label = run::phase_label(in.compare_by, name);
    const run::PhaseKey key = run::split_phase(name);
    p.value = key.value;
    p.repeat = key.repeat;
    for (const JobData* d : members) p.jobs.push_back(d->id);
    JobSums sums;
    for (const JobData* d : members) sums.add(*d);
    p.samples = sums.samples;
    p.time_to_target_s = time_to_target(members);
    p.seed_noise = seed_noise(members);
    p.side_by_side = overlapped(members);
    gpu_conditions(p, members);
    slurm_conditions(p, in, members);
    const auto sittings = sittings_of(members);
    p.sittings = static_cast<int>(sittings.size());
    if (sittings.size() == 1) p.sitting = *sittings.begin();
    for (const JobData* d : members) {
      p.gpu = p.gpu || results::device_of(d->params) == jobs::Device::gpu;
      if (d->status == "diverged") {
        std::string why = d->exit_reason;
        if (why.rfind("diverged: ", 0) == 0) why.erase(0, 10);
        p.diverged.push_back(d->id + (why.empty() ? std::string() : " (" + why + ")"));
      }
    }
    double start = first_start(members);
    const auto rec = in.recorded.find(name);
    if (rec != in.recorded.end()) {
      const run::PhaseRecord& r = rec->second;
      const double m = r.makespan_s;
      p.makespan_s = m;
      p.samples_per_s = m > 0 ? sums.samples / m : kNaN;
      p.alloc_util = m > 0 && r.capacity > 0 ? r.busy_resource_s / (r.capacity * m) : kNaN;
      p.util_mean = sums.util_n > 0 ? sums.util_mean() : p.alloc_util;
      if (std::isfinite(r.start_unix)) start = r.start_unix;
      if (std::isfinite(r.max_running)) p.side_by_side = r.max_running > 1;
      p.other_cpu_share = r.other_cpu_share;
      if (!r.sitting.empty()) p.sitting = r.sitting;
      std::size_t covered = 0;
      for (const JobData* d : members)
        covered += std::find(r.jobs.begin(), r.jobs.end(), d->id) != r.jobs.end() ? 1 : 0;
      if (covered < members.size())
        withhold(p, "state.json's record of it covers " + std::to_string(covered) + " of its " +
                        std::to_string(members.size()) +
                        " jobs (jobs ran in another sitting or were added later)");
    } else if (!in.recorded.empty() || members.empty()) {
      withhold(p, "no record of it in state.json");
    } else {
      double first = kNaN, last = kNaN;
      for (const JobData* d : members) {
        // From its launch (srun's start, the runner's launched_unix) when the file says, so that a
        // Slurm phase counts its jobs' launch as a local one does; else the file's own start.
        auto s0 = figure(*d, "launched_unix");
        if (!s0) s0 = job_time(*d, "start_unix", d->start_time);
        const auto e0 = job_time(*d, "end_unix", d->end_time);
        if (s0) first = std::isnan(first) ? *s0 : std::min(first, *s0);
        if (e0) last = std::isnan(last) ? *e0 : std::max(last, *e0);
      }
      p.makespan_s = last - first;
      p.samples_per_s = p.makespan_s > 0 ? sums.samples / p.makespan_s : kNaN;
      p.util_mean = sums.util_mean();
    }
    {
      std::vector<TimeSplit> splits;
      double train = 0, res = kNaN;
      bool mixed = false;
      for (const JobData* d : members) {
        TimeSplit t = time_split(*d);
        if (const auto launched = figure(*d, "launched_unix"); launched && std::isfinite(start))
          t.wait_s = std::max(0.0, *launched - start);
        train += t.train_s * t.resources;  // NaN when a job does not say
        mixed = mixed || (std::isfinite(res) && res != t.resources);
        res = t.resources;
        splits.push_back(t);
      }
      p.time = summarize_times(splits);
      p.train_resource_s = members.empty() ? kNaN : train;
      p.job_resources = mixed ? kNaN : res;
    }
    p.arrangement = arrangement_of(members, p.side_by_side);
    p.start_unix = start;
    if (!p.diverged.empty())
      withhold(p,
               "its job " + p.diverged.front() +
                   (p.diverged.size() > 1 ? " and " + std::to_string(p.diverged.size() - 1) + " more" : "") +
                   " diverged; a diverged job stops early, so the phase's time says nothing about its "
                   "arrangement");
    if (p.unmeasured.empty() && p.sittings > 1)
      withhold(p, "its jobs ran in " + std::to_string(p.sittings) +
                      " sittings (an interruption, a resume, jobs added later or a requeue)");
    out.emplace_back(start, std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PhaseFigures> phases;
  for (auto& o : out) phases.push_back(std::move(o.second));
  return phases;
}

}  // namespace gridrun::report
