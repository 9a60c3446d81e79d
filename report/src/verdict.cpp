// The verdict of a compare-by run (verdict.hpp).
#include "gridrun/report/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "gridrun/base/stats.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/hw/gpu_conditions.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/run/prepare.hpp"

namespace gridrun::report {

namespace {

std::string fixed(double v, int prec) { return base::format_fixed(v, prec); }
std::string pct(double share) { return fixed(100 * share, 0) + " %"; }

// The conditions that make a phase "disturbed" (verdict.hpp's thresholds): its machine's CPU
// taken by other processes, its GPUs shared with a stranger's process or throttled.
bool cpu_disturbed(const PhaseFigures& p) {
  return std::isfinite(p.other_cpu_share) && p.other_cpu_share > kDisturbedShare;
}
bool gpu_shared(const PhaseFigures& p) {
  return std::isfinite(p.gpu_foreign_share) && p.gpu_foreign_share > kGpuSharedShare;
}
bool throttled(const PhaseFigures& p) {
  return std::isfinite(p.gpu_throttled_share) && p.gpu_throttled_share > kThrottledShare;
}
// Slurm: any other job on its nodes (Slurm says that a job ran there, not how much it used).
bool nodes_shared(const PhaseFigures& p) { return !p.slurm_others.empty(); }
bool disturbed(const PhaseFigures& p) {
  return cpu_disturbed(p) || gpu_shared(p) || throttled(p) || nodes_shared(p);
}

std::string slurm_jobs(std::size_t n) { return std::to_string(n) + " other Slurm job" + (n == 1 ? "" : "s"); }

std::string throttle_names(const PhaseFigures& p) {
  const std::string names = hw::throttle_reason_names(p.gpu_throttle_reasons);
  return names.empty() ? "" : " (" + names + ")";
}

// What disturbed a phase, in a few words each ("26 % of the CPU to other processes").
std::string disturbance(const PhaseFigures& p) {
  std::vector<std::string> what;
  if (cpu_disturbed(p)) what.push_back(pct(p.other_cpu_share) + " of the CPU to other processes");
  if (gpu_shared(p))
    what.push_back("its GPUs shared with other processes in " + pct(p.gpu_foreign_share) + " of the samples");
  if (throttled(p))
    what.push_back("its GPUs throttled" + throttle_names(p) + " in " + pct(p.gpu_throttled_share) +
                   " of the samples");
  if (nodes_shared(p)) what.push_back("its nodes shared with " + slurm_jobs(p.slurm_others.size()));
  std::string out;
  for (const auto& w : what) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// One sentence per condition that disturbed `p`, each with the command that measures it again.
void disturbed_lines(const PhaseFigures& p, const VerdictOptions& opts, std::vector<std::string>& out) {
  const std::string rerun = opts.rerun_prefix + " --rerun phase=" + p.name;
  if (cpu_disturbed(p))
    out.push_back(p.label + " was measured while " + pct(p.other_cpu_share) +
                  " of the machine's CPU went to other processes (more than " + pct(kDisturbedShare) +
                  "): not comparable. Rerun it on a quiet machine: " + rerun);
  if (gpu_shared(p)) {
    const double n = std::isfinite(p.gpu_foreign_procs) ? p.gpu_foreign_procs : 1;
    out.push_back(p.label + " was measured while its GPUs ran " + (n > 1 ? "up to " + fixed(n, 0) : "a") +
                  " compute process" + (n > 1 ? "es" : "") + " of no job of this run beside its own, in " +
                  pct(p.gpu_foreign_share) + " of the samples (more than " + pct(kGpuSharedShare) +
                  "): not comparable. Rerun it when its GPUs are free: " + rerun);
  }
  if (throttled(p))
    out.push_back(p.label + " was measured while its GPUs were throttled" + throttle_names(p) + " in " +
                  pct(p.gpu_throttled_share) + " of the samples (more than " + pct(kThrottledShare) + ")" +
                  (std::isfinite(p.gpu_sm_clock_share)
                       ? ", at " + pct(p.gpu_sm_clock_share) + " of their highest SM clock on average"
                       : "") +
                  ": not comparable. Rerun it once the GPUs are cool and under their power limit: " + rerun);
  if (nodes_shared(p)) {
    std::string jobs;
    for (std::size_t k = 0; k < p.slurm_others.size() && k < 3; ++k)
      jobs += (k ? "; " : "") + p.slurm_others[k];
    if (p.slurm_others.size() > 3) jobs += "; ...";
    out.push_back(
        p.label + " shared its nodes with " + slurm_jobs(p.slurm_others.size()) + " while it ran (" + jobs +
        "): not comparable. Rerun it when its nodes are free (or with --sbatch-arg=--exclusive): " + rerun);
  }
}

// The likely cause of a phase `off` (makespan over predicted, minus 1) from its calibrated
// prediction, by direction: load on the machine makes a phase slower, never faster. Slower: what
// disturbed it, else a load under the disturbed threshold that still slows (issue 58: 16 % of the
// CPU made a phase 27 % slower), else a stale calibration. Faster: the calibration measured slower
// than the machine runs, and when it was taken under load, that is the likely why.
std::string prediction_cause(const PhaseFigures& p, double off) {
  if (off < 0) {
    if (std::isfinite(p.calibration_other_cpu_share) &&
        p.calibration_other_cpu_share > run::kCalibrationLoadShare)
      return "the calibration was measured while other processes took " + pct(p.calibration_other_cpu_share) +
             " of the CPU, so it predicted too long: gridrun calibrate again on a quiet machine";
    return "its calibration measured it slower than it ran (a stale calibration, or one taken while the "
           "machine "
           "was busier): gridrun calibrate again";
  }
  if (cpu_disturbed(p)) return "other processes took " + pct(p.other_cpu_share) + " of the CPU while it ran";
  if (gpu_shared(p))
    return "other processes shared its GPUs in " + pct(p.gpu_foreign_share) + " of the samples";
  if (throttled(p))
    return "its GPUs were throttled" + throttle_names(p) + " in " + pct(p.gpu_throttled_share) +
           " of the samples";
  if (nodes_shared(p)) return "it shared its nodes with " + slurm_jobs(p.slurm_others.size());
  if (std::isfinite(p.other_cpu_share) && p.other_cpu_share > kSlowingShare)
    return "other processes took " + pct(p.other_cpu_share) + " of the CPU while it ran: under the " +
           pct(kDisturbedShare) + " that marks a phase disturbed, yet enough to slow it";
  if (std::isfinite(p.other_cpu_share))
    return "the machine was quiet (" + pct(p.other_cpu_share) +
           " to other processes), so the calibration may be stale: gridrun calibrate again";
  return "if the machine, the code or the load changed since, gridrun calibrate again";
}

// How much slower than its calibrated prediction a phase ran (makespan over predicted, minus 1),
// NaN without a prediction.
double over_prediction(const PhaseFigures& p) {
  return p.predicted_makespan_s > 0 && std::isfinite(p.makespan_s) ? p.makespan_s / p.predicted_makespan_s - 1
                                                                   : std::nan("");
}

// The spread of one condition over phases measured apart: alike when every phase says and they
// differ by at most kApartLoadDifference, or when none says (a CPU run has no GPU figures).
struct Spread {
  double lo = 1, hi = 0;
  int known = 0, unknown = 0;
  void add(double v) {
    if (!std::isfinite(v)) {
      ++unknown;
      return;
    }
    ++known;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool alike() const { return known == 0 || (unknown == 0 && hi - lo <= kApartLoadDifference); }
};

// ", its GPUs throttled in 3 % and shared in 0 % of the samples" for a phase measured apart.
std::string gpu_conditions_text(const PhaseFigures& p) {
  std::string out;
  if (std::isfinite(p.gpu_throttled_share)) out += ", its GPUs throttled in " + pct(p.gpu_throttled_share);
  if (std::isfinite(p.gpu_foreign_share))
    out += (out.empty() ? ", its GPUs shared in " : " and shared in ") + pct(p.gpu_foreign_share);
  out = out.empty() ? out : out + " of the samples";
  if (p.slurm_others_known)
    out += p.slurm_others.empty() ? ", no other Slurm job on its nodes"
                                  : ", its nodes shared with " + slurm_jobs(p.slurm_others.size());
  return out;
}

// The classic question's words, only when they are true: with two phases, one that ran its jobs
// one at a time, each holding more cores (GPUs) than each job of the other, which ran them side
// by side. Anything else is named by its arrangement alone.
std::vector<std::string> roles_of(const std::vector<const PhaseFigures*>& m) {
  std::vector<std::string> role(m.size());
  if (m.size() != 2) return role;
  for (std::size_t large = 0; large < 2; ++large) {
    const PhaseFigures& l = *m[large];
    const PhaseFigures& s = *m[1 - large];
    if (!l.side_by_side && s.side_by_side && s.jobs.size() > 1 && std::isfinite(l.job_resources) &&
        std::isfinite(s.job_resources) && l.job_resources > s.job_resources) {
      role[large] = "one large job at a time";
      role[1 - large] = "several small side by side";
    }
  }
  return role;
}

// "ranks=1 (2 jobs x 1 rank, side by side)", with a role "several small side by side (ranks=1, 2
// jobs x 1 rank)".
std::string describe(const PhaseFigures& p, const std::string& role) {
  if (role.empty()) return phase_title(p);
  std::string how = p.arrangement;
  for (const char* tail : {", side by side", ", one after another"})
    if (base::ends_with(how, tail)) how.resize(how.size() - std::string(tail).size());
  return role + " (" + p.label + (how.empty() ? "" : ", " + how) + ")";
}

std::string when(double unix_s) {
  if (!std::isfinite(unix_s)) return "at an unknown time";
  return "on " + base::iso_minutes(base::iso_time(static_cast<std::time_t>(unix_s)));
}

// The repeats of one compared value (compare.repeats): its measurements, the undisturbed ones
// that count, and a stand-in PhaseFigures with their medians for the sentences shared with a
// single measurement.
struct Repeated {
  std::vector<const PhaseFigures*> all, used;
  PhaseFigures summary;
  // The measurements the stand-in's medians come from: the undisturbed ones, else all.
  const std::vector<const PhaseFigures*>& counted() const { return used.empty() ? all : used; }
};

// Paired per-repeat ratios of `slow` over `fast` (repeats measured undisturbed in both): their
// geometric mean and 95 % interval (t over the log ratios; Georges et al. 2007), NaN bounds with
// fewer than two pairs.
struct Ratio {
  double mean = std::nan(""), lo = std::nan(""), hi = std::nan("");
  std::size_t pairs = 0;
};
Ratio paired_ratio(const Repeated& fast, const Repeated& slow) {
  std::vector<double> logs;
  for (const PhaseFigures* f : fast.used)
    for (const PhaseFigures* s : slow.used)
      if (f->repeat == s->repeat) logs.push_back(std::log(s->makespan_s / f->makespan_s));
  const base::MeanCi m = base::mean_ci95(logs);  // NaN mean without pairs, NaN width below two
  Ratio r;
  r.pairs = logs.size();
  r.mean = std::exp(m.mean);
  r.lo = std::exp(m.mean - m.half_width);
  r.hi = std::exp(m.mean + m.half_width);
  return r;
}

std::string load_text(double share) {
  return std::isfinite(share) ? pct(share) + " of the CPU to other processes" : "load not recorded";
}

}  // namespace

std::string phase_title(const PhaseFigures& p) {
  return p.arrangement.empty() ? p.label : p.label + " (" + p.arrangement + ")";
}

namespace {

// The stand-in of one compared value's repeats: its undisturbed repeats' medians (every repeat's
// when all were disturbed); the disturbed ones are named in `left_out`.
void summarize_repeats(Repeated& r, const std::string& v, const VerdictOptions& opts,
                       std::vector<std::string>& left_out) {
  for (const PhaseFigures* p : r.all)
    if (disturbed(*p))
      left_out.push_back(p->label + " (" + disturbance(*p) + ")");
    else
      r.used.push_back(p);
  const auto& from = r.counted();
  r.summary = *from.front();
  r.summary.label = run::phase_label(opts.compare_by, v);
  r.summary.name = v;
  auto med = [&](auto figure) {
    std::vector<double> xs;
    for (const PhaseFigures* p : from)
      if (std::isfinite(figure(*p))) xs.push_back(figure(*p));
    return base::median(xs);
  };
  r.summary.makespan_s = med([](const PhaseFigures& p) { return p.makespan_s; });
  r.summary.train_resource_s = med([](const PhaseFigures& p) { return p.train_resource_s; });
  r.summary.predicted_makespan_s = med([](const PhaseFigures& p) { return p.predicted_makespan_s; });
  r.summary.time_to_target_s = med([](const PhaseFigures& p) { return p.time_to_target_s; });
  r.summary.other_cpu_share = med([](const PhaseFigures& p) { return p.other_cpu_share; });
  r.summary.gpu_foreign_share = med([](const PhaseFigures& p) { return p.gpu_foreign_share; });
  r.summary.gpu_foreign_procs = med([](const PhaseFigures& p) { return p.gpu_foreign_procs; });
  r.summary.gpu_throttled_share = med([](const PhaseFigures& p) { return p.gpu_throttled_share; });
  r.summary.gpu_sm_clock_share = med([](const PhaseFigures& p) { return p.gpu_sm_clock_share; });
  std::set<std::string> others;
  for (const PhaseFigures* p : from) {
    r.summary.gpu_throttle_reasons |= p->gpu_throttle_reasons;
    r.summary.slurm_others_known = r.summary.slurm_others_known || p->slurm_others_known;
    others.insert(p->slurm_others.begin(), p->slurm_others.end());
  }
  r.summary.slurm_others.assign(others.begin(), others.end());
  r.summary.time.launch_share = med([](const PhaseFigures& p) { return p.time.launch_share; });
}

// Phases measured in different sittings: compared as they are under alike load, else a reason
// for "inconclusive" and the command that measures them together.
void sitting_caveats(const std::vector<const PhaseFigures*>& measured, const VerdictOptions& opts,
                     std::vector<std::string>& reasons, std::vector<std::string>& caveats) {
  std::set<std::string> sittings;
  for (const PhaseFigures* p : measured)
    if (!p->sitting.empty()) sittings.insert(p->sitting);
  if (sittings.size() > 1) {
    Spread cpu, throttle, shared;
    std::string each;
    for (const PhaseFigures* p : measured) {
      cpu.add(p->other_cpu_share);
      throttle.add(p->gpu_throttled_share);
      shared.add(p->gpu_foreign_share);
      each += std::string(each.empty() ? "" : "; ") + p->label + " " + when(p->start_unix) + ", " +
              load_text(p->other_cpu_share) + gpu_conditions_text(*p);
    }
    const bool known = cpu.known > 0 && cpu.unknown == 0;
    const bool alike =
        known && cpu.alike() && cpu.hi <= kDisturbedShare && throttle.alike() && shared.alike() &&
        std::none_of(measured.begin(), measured.end(), [](const PhaseFigures* p) { return disturbed(*p); });
    if (alike) {
      caveats.push_back("The phases were measured apart (" + each +
                        "), under alike load: compared as they are.");
    } else {
      reasons.push_back("the phases were measured apart under different load");
      caveats.push_back("The phases were measured apart (" + each + (known ? "): their load differs" : ")") +
                        ", so their times are not comparable. Measure them again together: " +
                        opts.rerun_prefix + " --rerun compare");
    }
  }
}

// When launch is more than half of every phase's resource-seconds: the line that says so, with the
// training-only comparison when both phases' training seconds are known; "" otherwise.
std::string launch_line(const std::vector<const PhaseFigures*>& measured, const PhaseFigures& best,
                        const PhaseFigures& next) {
  const bool launch_bound = std::any_of(measured.begin(), measured.end(), [](const PhaseFigures* p) {
    return std::isfinite(p->time.launch_share) && p->time.launch_share > kLaunchBoundShare;
  });
  if (!launch_bound) return "";
  const char* unit = best.gpu ? "GPU" : "core";
  std::string shares, above;
  std::size_t n_above = 0;
  for (const PhaseFigures* p : measured)
    if (std::isfinite(p->time.launch_share)) {
      shares += std::string(shares.empty() ? "" : ", ") + p->label + " " + pct(p->time.launch_share);
      if (p->time.launch_share > kLaunchBoundShare) {
        above += std::string(above.empty() ? "" : " and ") + p->label;
        ++n_above;
      }
    }
  // "More than half" must hold for every phase it names (issue 58: "ranks=2 52 %, ranks=1 43 %"
  // was called more than half of the core-seconds): name the phases when not all of them are.
  const bool every = n_above == measured.size();
  std::string line = "Launch is more than half of the " + std::string(unit) + "-seconds" +
                     (every ? "" : " of " + above) + " (" + shares +
                     "): this answer is about start-up, not training.";
  if (std::isfinite(best.train_resource_s) && std::isfinite(next.train_resource_s) &&
      best.train_resource_s > 0 && next.train_resource_s > 0) {
    const bool same = best.train_resource_s <= next.train_resource_s;
    const PhaseFigures& lo = same ? best : next;
    const PhaseFigures& hi = same ? next : best;
    line += " Training alone: " + lo.label + " " + fixed(lo.train_resource_s, 1) + " " + unit + "-s, " +
            hi.label + " " + fixed(hi.train_resource_s, 1) + " " + unit + "-s: by training, " + lo.label +
            " wins, " + fixed(hi.train_resource_s / lo.train_resource_s, 2) + "x fewer " + unit + "-seconds" +
            (same ? "" : " (the makespan says the other way)") +
            ". For an answer about training, give the jobs more steps.";
  }
  return line;
}

// A phase far off its calibrated prediction, with the likely cause; then, when every phase
// reached the target, which reached it first.
void prediction_and_target_lines(const std::vector<const PhaseFigures*>& measured,
                                 const std::vector<std::size_t>& order, std::vector<std::string>& out) {
  // Prediction as a cross-check: a phase far off its calibrated prediction, with the likely cause.
  // Slower is named from kSlowerThanCalibrated (a slowdown skews the comparison even under the
  // disturbed threshold), faster from kPredictionOff.
  for (const PhaseFigures* p : measured) {
    const double off = over_prediction(*p);
    if (!std::isfinite(off) || (off > 0 ? off <= kSlowerThanCalibrated : -off <= kPredictionOff)) continue;
    const std::string cause = prediction_cause(*p, off);
    out.push_back(p->label + " took " + fixed(100 * std::fabs(off), 0) + (off > 0 ? " % longer" : " % less") +
                  " than predicted (" + fixed(p->makespan_s, 1) + " s, predicted " +
                  fixed(p->predicted_makespan_s, 1) + " s): " + cause + ".");
  }

  bool all_ttt = true;
  for (const PhaseFigures* p : measured) all_ttt = all_ttt && std::isfinite(p->time_to_target_s);
  if (all_ttt) {
    std::vector<std::size_t> by_ttt = order;
    std::stable_sort(by_ttt.begin(), by_ttt.end(), [&](std::size_t a, std::size_t b) {
      return measured[a]->time_to_target_s < measured[b]->time_to_target_s;
    });
    std::string line = "First to reach the target: " + measured[by_ttt[0]]->label + " (" +
                       fixed(measured[by_ttt[0]]->time_to_target_s, 1) + " s";
    for (std::size_t k = 1; k < by_ttt.size(); ++k)
      line +=
          "; " + measured[by_ttt[k]]->label + " " + fixed(measured[by_ttt[k]]->time_to_target_s, 1) + " s";
    out.push_back(line + ").");
  }
}

// The phases with a makespan; the others each get their line in `out` (diverged, or unmeasured
// with the command that measures them again).
std::vector<const PhaseFigures*> measured_phases(const std::vector<PhaseFigures>& phases,
                                                 const VerdictOptions& opts, std::vector<std::string>& out) {
  std::vector<const PhaseFigures*> measured;
  for (const auto& p : phases) {
    if (!p.diverged.empty()) {
      out.push_back("Left out: " + phase_title(p) + ": " + p.unmeasured +
                    ". Lower its lr (or check the model) and run it again.");
    } else if (!p.unmeasured.empty()) {
      out.push_back("No verdict for " + p.label + ": " + p.unmeasured +
                    ". Measure it again in one sitting: " + opts.rerun_prefix + " --rerun phase=" + p.name);
    } else if (std::isfinite(p.makespan_s) && p.makespan_s > 0) {
      measured.push_back(&p);
    }
  }
  return measured;
}

// " (predicted 1.30x)": what the calibrated prediction said before the compute was spent
// (prediction.json); "" without one for both phases.
std::string predicted_text(const PhaseFigures& best, const PhaseFigures& next) {
  std::string predicted;
  if (std::isfinite(best.predicted_makespan_s) && std::isfinite(next.predicted_makespan_s) &&
      best.predicted_makespan_s > 0 && next.predicted_makespan_s > 0) {
    const double pm = next.predicted_makespan_s / best.predicted_makespan_s;
    predicted = pm >= 1 ? " (predicted " + fixed(pm, 2) + "x)"
                        : " (predicted the other way: " + next.label + " " + fixed(1 / pm, 2) + "x faster)";
  }
  return predicted;
}

// The largest seed-to-seed throughput spread of the phases, NaN when none is known.
double seed_noise(const std::vector<const PhaseFigures*>& measured) {
  double noise = std::nan("");
  for (const PhaseFigures* p : measured)
    if (std::isfinite(p->seed_noise))
      noise = std::isnan(noise) ? p->seed_noise : std::max(noise, p->seed_noise);
  return noise;
}

// How a stand-in's time was taken: a median of several repeats, or the one measurement that
// counted (a median of one is no median).
std::string median_of(std::size_t n) {
  return n == 1 ? " (one measurement)" : " (median of " + std::to_string(n) + ")";
}

}  // namespace

std::vector<std::string> verdict_lines(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts) {
  return verdict_of(phases, opts).lines;
}

namespace {

// A phase that ran more than kSlowerThanCalibrated slower than its calibration without being
// disturbed (its line comes with the prediction's): when taking that slowdown away would put it
// ahead of the winner `best`, the margin is not the arrangements' own (a reason in `reasons`).
// Whether any phase was so slowed.
bool slowed_reasons(const std::vector<const PhaseFigures*>& measured, const PhaseFigures& best,
                    std::vector<std::string>& reasons) {
  bool slowed = false;
  for (const PhaseFigures* p : measured) {
    const double off = over_prediction(*p);
    if (!(off > kSlowerThanCalibrated) || disturbed(*p)) continue;
    slowed = true;
    if (p != &best && p->makespan_s / (1 + off) < best.makespan_s)
      reasons.push_back(p->label + " ran " + fixed(100 * off, 0) +
                        " % slower than its calibration predicted, enough to turn the answer");
  }
  return slowed;
}

// "a, b and c".
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t k = 0; k < items.size(); ++k)
    out += (k == 0 ? "" : k + 1 == items.size() ? " and " : ", ") + items[k];
  return out;
}

}  // namespace

std::string VerdictHeadline::text() const {
  std::string t = winner + " " + fixed(ratio, 2) + "x";
  if (std::isfinite(lo) && std::isfinite(hi)) t += " [" + fixed(lo, 2) + ", " + fixed(hi, 2) + "]";
  std::vector<std::string> marks;
  if (inconclusive) marks.emplace_back("inconclusive");
  if (disturbed) marks.emplace_back("disturbed");
  if (slower_than_calibrated) marks.emplace_back("slowed");
  if (launch_bound) marks.emplace_back("start-up");
  for (std::size_t k = 0; k < marks.size(); ++k) t += (k ? ", " : "; ") + marks[k];
  return t;
}

Verdict verdict_of(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts) {
  Verdict v;
  std::vector<std::string>& out = v.lines;
  if (phases.size() < 2) return v;
  std::vector<const PhaseFigures*> measured = measured_phases(phases, opts, out);
  if (measured.size() < 2) {
    if (out.empty()) out.push_back("No verdict: fewer than two phases have a makespan.");
    return v;
  }
  // Repeats (compare.repeats): the phases of one value become one stand-in with its medians; the
  // margin is then the paired ratio with its interval, and a disturbed repeat is left out of it.
  std::map<std::string, Repeated> repeated;
  std::vector<std::string> values;
  bool has_repeats = false;
  for (const PhaseFigures* p : measured) {
    if (!repeated.count(p->value)) values.push_back(p->value);
    repeated[p->value].all.push_back(p);
    has_repeats = has_repeats || p->repeat > 0;
  }
  std::vector<std::string> left_out;
  if (has_repeats) {
    std::vector<const PhaseFigures*> stand_ins;
    for (const std::string& v : values) {
      Repeated& r = repeated[v];
      summarize_repeats(r, v, opts, left_out);
      stand_ins.push_back(&r.summary);
    }
    measured = stand_ins;
  }
  const std::vector<std::string> role = roles_of(measured);
  std::string finished;
  for (std::size_t k = 0; k < measured.size(); ++k)
    finished += (k ? "; " : "") + describe(*measured[k], role[k]) + (k ? " in " : " finished in ") +
                fixed(measured[k]->makespan_s, 1) + " s" +
                (has_repeats ? median_of(repeated[measured[k]->name].counted().size()) : "");
  std::vector<std::size_t> order(measured.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return measured[a]->makespan_s < measured[b]->makespan_s;
  });
  const PhaseFigures& best = *measured[order[0]];
  const PhaseFigures& next = *measured[order[1]];
  double margin = next.makespan_s / best.makespan_s;
  // With repeats: the paired ratio of the two best, and its interval.
  Ratio ratio;
  std::string ci, interval;
  if (has_repeats) {
    ratio = paired_ratio(repeated[best.name], repeated[next.name]);
    if (std::isfinite(ratio.mean)) margin = ratio.mean;
    ci = std::isfinite(ratio.lo) ? "[" + fixed(ratio.lo, 2) + ", " + fixed(ratio.hi, 2) + "]" : "";
    interval = (ci.empty() ? "" : " " + ci) + ", " + std::to_string(ratio.pairs) +
               (ratio.pairs == 1 ? " repeat" : " interleaved repeats");
  }
  const std::string& winner = role[order[0]].empty() ? best.label : role[order[0]];
  const bool plural = role[order[0]].rfind("several", 0) == 0;
  // What the calibrated prediction said before the compute was spent (prediction.json).
  const std::string predicted = predicted_text(best, next);
  const std::string than = measured.size() > 2 ? " than the next (" + next.label + ")" : "";

  // Why the margin may not be the arrangements' own: each reason is a sentence of its own below,
  // and any of them makes the headline "inconclusive".
  std::vector<std::string> caveats, reasons;
  if (has_repeats && ratio.pairs < 2)
    reasons.push_back("fewer than 2 repeats were measured undisturbed in both " + best.label + " and " +
                      next.label);
  else if (has_repeats && !(ratio.lo > 1))
    reasons.push_back("the 95 % interval of the ratio " + ci + " includes 1");
  if (!left_out.empty()) {
    std::string l;
    for (const auto& s : left_out) l += (l.empty() ? "" : "; ") + s;
    caveats.push_back("Left out of the ratio, disturbed: " + l + ".");
  }
  for (const PhaseFigures* p : measured)
    if (disturbed(*p)) {
      reasons.push_back(p->label + " was disturbed");
      disturbed_lines(*p, opts, caveats);
    }
  sitting_caveats(measured, opts, reasons, caveats);
  const bool slowed = slowed_reasons(measured, best, reasons);
  const double noise = seed_noise(measured);
  // Two phases differ by more than their noise when the margin exceeds twice the throughput spread
  // of one seed to the next (a rough 95% band for a difference of two noisy figures).
  const bool in_noise = std::isfinite(noise) && margin - 1 <= 2 * noise;
  if (in_noise)
    reasons.push_back("the margin (" + fixed(100 * (margin - 1), 0) +
                      " %) is inside the noise of the seeds (" + "throughput varies by " +
                      fixed(100 * noise, 0) + " % from seed to seed)");

  const std::string tail = fixed(margin, 2) + "x faster" + interval + than + predicted + ".";
  out.push_back(reasons.empty() ? finished + ": " + winner + (plural ? " win, " : " wins, ") + tail
                                : finished + ": inconclusive, " + listed(reasons) + ". As measured, " +
                                      best.label + " was " + tail);
  VerdictHeadline& h = v.headline.emplace();
  h.winner = best.label;
  h.ratio = margin;
  if (has_repeats) {
    h.lo = ratio.lo;
    h.hi = ratio.hi;
  }
  h.inconclusive = !reasons.empty();
  h.disturbed =
      std::any_of(measured.begin(), measured.end(), [](const PhaseFigures* p) { return disturbed(*p); });
  h.slower_than_calibrated = slowed;
  for (auto& c : caveats) out.push_back(std::move(c));
  if (in_noise) out.push_back("Call it a tie, or run more seeds to narrow the noise.");
  if (std::isnan(noise) && !(has_repeats && ratio.pairs >= 2))
    out.push_back(
        "Its noise is unknown: each configuration ran once, with one seed. Run 2 or more seeds "
        "(seeds: [0, 1, 2]) to learn how much a phase's time varies before trusting a margin under 10 %.");

  // Launch set apart: when start-up dominates, the makespan answers "which starts faster".
  if (std::string line = launch_line(measured, best, next); !line.empty()) {
    out.push_back(std::move(line));
    h.launch_bound = true;
  }

  prediction_and_target_lines(measured, order, out);
  return v;
}

}  // namespace gridrun::report
