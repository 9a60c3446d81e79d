// The verdict of a compare-by run (verdict.hpp).
#include "gridrun/report/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gridrun/base/text.hpp"

namespace gridrun::report {

namespace {

std::string fixed(double v, int prec) { return base::format_fixed(v, prec); }

// "ranks=2 (2 jobs, one after another)", or with a role "one large job (ranks=2, 2 jobs, one
// after another)".
std::string describe(const PhaseFigures& p, const std::string& role) {
  const std::size_t n = p.jobs.size();
  const std::string how =
      n <= 1 ? "1 job"
             : std::to_string(n) + " jobs, " + (p.side_by_side ? "side by side" : "one after another");
  return role.empty() ? p.label + " (" + how + ")" : role + " (" + p.label + ", " + how + ")";
}

double as_number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0' ? v : std::nan("");
}

}  // namespace

std::vector<std::string> verdict_lines(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts) {
  std::vector<std::string> out;
  if (phases.size() < 2) return out;
  std::vector<const PhaseFigures*> measured;
  for (const auto& p : phases) {
    if (!p.unmeasured.empty()) {
      out.push_back("No verdict for " + p.label + ": " + p.unmeasured +
                    ". Measure it again in one sitting: " + opts.rerun_prefix + " --rerun phase=" + p.name);
    } else if (std::isfinite(p.makespan_s) && p.makespan_s > 0) {
      measured.push_back(&p);
    }
  }
  if (measured.size() < 2) {
    if (out.empty()) out.push_back("No verdict: fewer than two phases have a makespan.");
    return out;
  }
  // Roles for the classic question: the larger of two ranks/nodes values is "one large job" (each
  // configuration as one large job at a time), the smaller "several small".
  std::vector<std::string> role(measured.size());
  if (measured.size() == 2 && (opts.compare_by == "ranks" || opts.compare_by == "nodes")) {
    const double a = as_number(measured[0]->name), b = as_number(measured[1]->name);
    if (std::isfinite(a) && std::isfinite(b) && a != b) {
      const std::size_t large = a > b ? 0 : 1;
      role[large] = "one large job";  // per configuration, one at a time
      role[1 - large] = "several small";
    }
  }
  std::string finished;
  for (std::size_t k = 0; k < measured.size(); ++k)
    finished += (k ? "; " : "") + describe(*measured[k], role[k]) + (k ? " in " : " finished in ") +
                fixed(measured[k]->makespan_s, 1) + " s";
  std::vector<std::size_t> order(measured.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return measured[a]->makespan_s < measured[b]->makespan_s;
  });
  const PhaseFigures& best = *measured[order[0]];
  const PhaseFigures& next = *measured[order[1]];
  const double margin = next.makespan_s / best.makespan_s;
  const std::string& winner = role[order[0]].empty() ? best.label : role[order[0]];
  const bool plural = role[order[0]] == "several small";
  // What the calibrated prediction said before the compute was spent (prediction.json).
  std::string predicted;
  if (std::isfinite(best.predicted_makespan_s) && std::isfinite(next.predicted_makespan_s) &&
      best.predicted_makespan_s > 0 && next.predicted_makespan_s > 0) {
    const double pm = next.predicted_makespan_s / best.predicted_makespan_s;
    predicted = pm >= 1 ? " (predicted " + fixed(pm, 2) + "x)"
                        : " (predicted the other way: " + next.label + " " + fixed(1 / pm, 2) + "x faster)";
  }
  out.push_back(finished + ": " + winner + (plural ? " win, " : " wins, ") + fixed(margin, 2) + "x faster" +
                (measured.size() > 2 ? " than the next (" + next.label + ")" : "") + predicted + ".");
  double noise = std::nan("");
  for (const PhaseFigures* p : measured)
    if (std::isfinite(p->seed_noise))
      noise = std::isnan(noise) ? p->seed_noise : std::max(noise, p->seed_noise);
  // Two phases differ by more than their noise when the margin exceeds twice the throughput spread
  // of one seed to the next (a rough 95% band for a difference of two noisy figures).
  if (std::isfinite(noise) && margin - 1 <= 2 * noise)
    out.push_back("The margin (" + fixed(100 * (margin - 1), 0) +
                  " %) is inside the noise of the seeds (throughput varies by " + fixed(100 * noise, 0) +
                  " % from seed to seed): call it a tie, or run more seeds.");
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
  return out;
}

}  // namespace gridrun::report
