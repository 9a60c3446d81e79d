// Derived per-job figures (/summary). Kept apart from the writer so that `gridrun report` and the
// tests compute exactly what the writer stores. Definitions are in docs/results.md.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gridrun/results/summary.hpp"

namespace gridrun::results {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  // Linear interpolation between closest ranks (numpy's default), so h5py users get the same.
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

struct Stats {
  double min = kNaN, max = kNaN, mean = kNaN;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  double sum = 0;
  std::size_t n = 0;
  for (double x : v) {
    if (std::isnan(x)) continue;
    s.min = n ? std::min(s.min, x) : x;
    s.max = n ? std::max(s.max, x) : x;
    sum += x;
    ++n;
  }
  if (n) s.mean = sum / static_cast<double>(n);
  return s;
}

// Per row: mean (or sum) of a matrix's non-NaN entries; NaN rows where all are NaN.
std::vector<double> per_row(const Matrix& m, bool sum) {
  std::vector<double> out;
  for (std::size_t r = 0; r < m.rows; ++r) {
    double acc = 0;
    std::size_t n = 0;
    for (std::size_t c = 0; c < m.cols; ++c) {
      double x = m.at(r, c);
      if (!std::isnan(x)) {
        acc += x;
        ++n;
      }
    }
    out.push_back(n ? (sum ? acc : acc / static_cast<double>(n)) : kNaN);
  }
  return out;
}

double param_number(const JobData& j, const std::string& name, double fallback) {
  if (auto v = param_value(j.params, name)) {
    if (auto* i = std::get_if<std::int64_t>(&*v)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&*v)) return *d;
  }
  return j.attr_number("param." + name, fallback);
}

// Step timings after warm-up, throughput, samples, comm shares, wall time.
void step_figures(const JobData& j, Summary& s) {
  const TableData& st = j.steps;
  s["steps_done"] = static_cast<double>(st.rows);
  s["epochs_done"] = static_cast<double>(j.epochs.rows);
  auto warm = static_cast<std::size_t>(std::max(0.0, param_number(j, "timing_warmup_steps", 5)));
  const auto* step_s = st.column("step_s");
  const auto* sps = st.column("samples_per_s");
  const auto* comm = st.column("comm_s");
  const auto* exposed = st.column("exposed_comm_s");
  double total_samples = 0;
  if (step_s && sps)
    for (std::size_t r = 0; r < st.rows; ++r)
      if (!std::isnan((*sps)[r] * (*step_s)[r])) total_samples += (*sps)[r] * (*step_s)[r];
  s["samples"] = total_samples;
  if (step_s && st.rows > 0) {
    // Few rows (short smoke runs): keep at least one row rather than report nothing.
    std::size_t first = st.rows > warm ? warm : st.rows - 1;
    // A row without its time (NaN: a command job's first step, whose start gridrun-exec cannot
    // see) counts in none of the figures.
    std::vector<double> t;
    double sum_t = 0, sum_samples = 0, sum_comm = 0, sum_exposed = 0;
    for (std::size_t r = first; r < st.rows; ++r) {
      if (std::isnan((*step_s)[r])) continue;
      t.push_back((*step_s)[r]);
      sum_t += (*step_s)[r];
      if (sps) sum_samples += (*sps)[r] * (*step_s)[r];
      if (comm) sum_comm += (*comm)[r];
      if (exposed) sum_exposed += (*exposed)[r];
    }
    s["step_s_mean"] = t.empty() ? kNaN : sum_t / static_cast<double>(t.size());
    s["step_s_p50"] = percentile(t, 0.50);
    s["step_s_p95"] = percentile(t, 0.95);
    s["samples_per_s"] = sum_t > 0 ? sum_samples / sum_t : kNaN;
    s["comm_share"] = sum_t > 0 && comm ? sum_comm / sum_t : kNaN;
    s["exposed_comm_share"] = sum_t > 0 && exposed ? sum_exposed / sum_t : kNaN;
    s["timing_rows"] = static_cast<double>(t.size());
  } else {
    for (const char* k :
         {"step_s_mean", "step_s_p50", "step_s_p95", "samples_per_s", "comm_share", "exposed_comm_share"})
      s[k] = kNaN;
    s["timing_rows"] = 0;
  }
  double wall_s = kNaN;
  if (const auto* wall = st.column("wall_s"); wall && !wall->empty()) wall_s = wall->back();
  if (const auto* ew = j.epochs.column("wall_s"); ew && !ew->empty())
    wall_s = std::isnan(wall_s) ? ew->back() : std::max(wall_s, ew->back());
  s["wall_s"] = wall_s;
}

// Accuracy, losses and convergence (time and epochs to the target accuracy).
void epoch_figures(const JobData& j, Summary& s) {
  const auto* acc = j.epochs.column("test_acc");
  const auto* ewall = j.epochs.column("wall_s");
  const auto* tloss = j.epochs.column("train_loss");
  const auto* teloss = j.epochs.column("test_loss");
  std::size_t ne = j.epochs.rows;
  s["final_test_acc"] = acc && ne ? (*acc)[ne - 1] : kNaN;
  s["best_test_acc"] = acc && ne ? stats(*acc).max : kNaN;
  s["final_train_loss"] = tloss && ne ? (*tloss)[ne - 1] : kNaN;
  s["final_test_loss"] = teloss && ne ? (*teloss)[ne - 1] : kNaN;
  double target = param_number(j, "target_accuracy", 0);
  s["target_accuracy"] = target > 0 ? target : kNaN;
  s["time_to_target_s"] = kNaN;
  s["epochs_to_target"] = kNaN;
  if (target > 0 && acc) {
    for (std::size_t r = 0; r < ne; ++r) {
      if ((*acc)[r] >= target) {
        s["time_to_target_s"] = ewall ? (*ewall)[r] : kNaN;
        s["epochs_to_target"] = static_cast<double>(r + 1);
        break;
      }
    }
  }
}

// Energy of the devices: their counters' increase where supported, else power (summed over the
// devices, per sample) integrated over time. NaN when neither is available.
double energy_j(const Matrix* counters, const std::vector<double>* time, const std::vector<double>& power) {
  if (counters && counters->rows >= 2) {
    double sum = 0;
    bool any = false;
    for (std::size_t c = 0; c < counters->cols; ++c) {
      double first = kNaN, last = kNaN;
      for (std::size_t r = 0; r < counters->rows; ++r) {
        double x = counters->at(r, c);
        if (std::isnan(x)) continue;
        if (std::isnan(first)) first = x;
        last = x;
      }
      if (!std::isnan(first)) {
        sum += last - first;
        any = true;
      }
    }
    if (any) return sum;
  }
  if (!time || power.size() < 2) return kNaN;
  double sum = 0;
  for (std::size_t r = 1; r < power.size(); ++r)
    if (!std::isnan(power[r]) && !std::isnan(power[r - 1]))
      sum += 0.5 * (power[r] + power[r - 1]) * ((*time)[r] - (*time)[r - 1]);
  return sum;
}

// Utilization, memory, power, energy.
void util_figures(const JobData& j, Summary& s) {
  const TableData& u = j.util;
  auto mat = [&](const char* n) -> const Matrix* {
    auto it = u.matrices.find(n);
    return it == u.matrices.end() ? nullptr : &it->second;
  };
  auto put_stats = [&](const std::string& prefix, const std::vector<double>& v) {
    Stats x = stats(v);
    s[prefix + "_mean"] = x.mean;
    s[prefix + "_min"] = x.min;
    s[prefix + "_max"] = x.max;
  };
  auto max_of = [&](const char* n) { return mat(n) ? stats(mat(n)->data).max : kNaN; };
  put_stats("cpu_util_pct",
            mat("rank_cpu_pct") ? per_row(*mat("rank_cpu_pct"), false) : std::vector<double>{});
  if (const auto* node = u.column("node_cpu_pct")) put_stats("node_cpu_pct", *node);
  s["peak_rss_bytes"] = max_of("rank_rss_bytes");
  const Matrix* gu = mat("gpu_util_pct");
  if (!gu) return;
  put_stats("gpu_util_pct", per_row(*gu, false));
  s["peak_gpu_mem_bytes"] = max_of("gpu_mem_bytes");
  std::vector<double> power = mat("gpu_power_w") ? per_row(*mat("gpu_power_w"), true) : std::vector<double>{};
  put_stats("gpu_power_w", power);
  s["gpu_temp_c_max"] = max_of("gpu_temp_c");
  const double energy = energy_j(mat("gpu_energy_j"), u.column("time_s"), power);
  const double samples = s["samples"];
  s["energy_j"] = energy;
  s["energy_per_sample_j"] = samples > 0 ? energy / samples : kNaN;
}

}  // namespace

Summary derive_summary(const JobData& j) {
  Summary s;
  step_figures(j, s);
  epoch_figures(j, s);
  util_figures(j, s);
  return s;
}

}  // namespace gridrun::results
