// `gridrun report`: builds the analysis tables from job records (see tables.hpp). Comparisons
// group jobs that are equal in every varying parameter except the compared one(s) and the seed;
// repeated seeds are averaged and shown with a 95% Student-t interval.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "gridrun/base/stats.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/jobs/suggest.hpp"
#include "gridrun/report/tables.hpp"
#include "gridrun/report/verdict.hpp"

namespace gridrun::report {

// Reports render results' records and job files; their vocabulary is used unqualified here.
using namespace gridrun::results;  // NOLINT(google-build-using-namespace)

namespace gj = gridrun::jobs;
using base::Cell;
using base::number_cell;
using base::Table;
using base::text_cell;
using results::JobRecord;
// The jobs a table is made of, as pointers into the loaded run: a report of 100,000 jobs selected,
// split into finished ones and grouped them as copies of every record (parameters and summary map).
using JobRefs = std::vector<const JobRecord*>;

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double fig(const JobRecord& j, const std::string& name) {
  auto it = j.summary.find(name);
  return it == j.summary.end() ? kNaN : it->second;
}

struct Agg {
  double mean = kNaN, ci = kNaN;
  std::size_t n = 0;
};

Agg agg(const std::vector<double>& v) {
  const base::MeanCi m = base::mean_ci95(v);
  return Agg{m.mean, m.half_width, m.n};
}

std::string fmt(double v, int prec) { return base::format_fixed(v, prec); }

// The mean with its 95% interval from 3 seeds on; from 2 an interval would only show how far two
// numbers are apart (a t quantile of 12.7 makes it wider than the mean itself), so "(n=2)".
Cell agg_cell(const Agg& a, int prec) {
  const bool interval = a.n >= 3 && !std::isnan(a.ci);
  Cell c{fmt(a.mean, prec), a.mean, interval ? a.ci : kNaN, true};
  if (interval)
    c.text += " ±" + fmt(a.ci, prec);
  else if (a.n == 2)
    c.text += " (n=2)";
  return c;
}

std::string human_bytes(double b) {
  if (std::isnan(b)) return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt(b, u == 0 ? 0 : 1) + " " + units[u];
}

// Short column names for long parameter names, so tables fit 100 columns.
std::string abbrev(const std::string& key) {
  static const std::map<std::string, std::string> a = {{"batch_per_rank", "bpr"},
                                                       {"global_batch", "gbatch"},
                                                       {"threads_per_rank", "threads"},
                                                       {"target_accuracy", "target"},
                                                       {"weight_decay", "wd"},
                                                       {"lr_schedule", "sched"},
                                                       {"precision", "prec"},
                                                       {"optimizer", "optim"},
                                                       {"warmup_steps", "warmup"},
                                                       {"train_samples", "ntrain"},
                                                       {"test_samples", "ntest"},
                                                       {"checkpoint_minutes", "ckpt_min"},
                                                       {"timing_warmup_steps", "twarm"},
                                                       {"profile_steps", "prof"},
                                                       {"eval_every", "eval"}};
  auto it = a.find(key);
  return it == a.end() ? key : it->second;
}

// Display order of parameters: the usual grid axes first, then alphabetical.
int key_rank(const std::string& k) {
  static const std::vector<std::string> order = {"model",
                                                 "dataset",
                                                 "task",
                                                 "device",
                                                 "ranks",
                                                 "nodes",
                                                 "threads_per_rank",
                                                 "batch_per_rank",
                                                 "global_batch",
                                                 "precision",
                                                 "optimizer",
                                                 "lr",
                                                 "lr_schedule",
                                                 "epochs",
                                                 "max_steps",
                                                 "target_accuracy",
                                                 "seed"};
  auto it = std::find(order.begin(), order.end(), k);
  return it == order.end() ? static_cast<int>(order.size()) : static_cast<int>(it - order.begin());
}

std::string value_of(const JobRecord& j, const std::string& key) {
  if (key == "id") return j.id;
  if (key == "status") return j.status;
  return param_text(j.params, key);
}

// Sorts values numerically when both are numbers, else as text.
bool value_less(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  double x = std::strtod(a.c_str(), &ea);
  double y = std::strtod(b.c_str(), &eb);
  if (!a.empty() && !b.empty() && !*ea && !*eb) return x < y;
  return a < b;
}

std::vector<std::string> varying_keys(const JobRefs& jobs) {
  std::vector<const RecordedParams*> params;
  params.reserve(jobs.size());
  for (const JobRecord* j : jobs) params.push_back(&j->params);
  std::vector<std::string> out = varying_params(params);
  std::stable_sort(out.begin(), out.end(),
                   [](const std::string& a, const std::string& b) { return key_rank(a) < key_rank(b); });
  return out;
}

// A job's value of one sort key, formatted and parsed once: value_less's order without a
// formatting and two strtod calls per comparison (100,000 jobs: 1.7 million comparisons).
struct SortKey {
  std::string text;
  double num = 0;
  bool numeric = false;  // not empty and a number as a whole (value_less compares those as numbers)
};

SortKey sort_key(std::string text) {
  SortKey k;
  char* end = nullptr;
  k.num = std::strtod(text.c_str(), &end);
  k.numeric = !text.empty() && !*end;
  k.text = std::move(text);
  return k;
}

bool finished(const JobRecord& j) { return j.status == "completed" || j.status == "target_reached"; }
bool is_gpu_job(const JobRecord& j) { return !std::isnan(fig(j, "gpu_util_pct_mean")); }

// A column of the jobs table that --sort takes by its name: the figure it shows (GPU jobs:
// gpu_figure when set) and which way it sorts unless told.
struct SortColumn {
  const char* name;
  const char* figure;
  const char* gpu_figure;
  bool descending;
};

const std::vector<SortColumn>& sort_columns() {
  static const std::vector<SortColumn> c = {{"test_acc", "final_test_acc", nullptr, true},
                                            {"samples/s", "samples_per_s", nullptr, true},
                                            {"p50_ms", "step_s_p50", nullptr, false},
                                            {"p95_ms", "step_s_p95", nullptr, false},
                                            {"comm%", "comm_share", nullptr, false},
                                            {"epochs", "epochs_done", nullptr, true},
                                            {"util%", "cpu_util_pct_mean", "gpu_util_pct_mean", true},
                                            {"peak_mem", "peak_rss_bytes", "peak_gpu_mem_bytes", false}};
  return c;
}

const SortColumn* sort_column(const std::string& name) {
  for (const auto& c : sort_columns())
    if (name == c.name) return &c;
  return nullptr;
}

// Whether the jobs table already shows the metric (a column's name or the figure behind one).
bool shown_in_table(const std::string& metric) {
  for (const auto& c : sort_columns())
    if (metric == c.name || metric == c.figure || (c.gpu_figure && metric == c.gpu_figure)) return true;
  return false;
}

// The /summary figures gridrun writes (docs/results.md): --sort takes them even when no job of the
// run has one yet (a run still running).
const std::vector<std::string>& written_figures() {
  static const std::vector<std::string> f = {"best_test_acc",        "comm_share",
                                             "cpu_util_pct_mean",    "energy_j",
                                             "energy_per_sample_j",  "epochs_done",
                                             "epochs_to_target",     "exposed_comm_share",
                                             "final_test_acc",       "final_test_loss",
                                             "final_train_loss",     "flops_per_s",
                                             "gpu_power_w_mean",     "gpu_util_pct_mean",
                                             "latency_p50_s",        "latency_p90_s",
                                             "latency_p99_s",        "mfu",
                                             "peak_gpu_mem_bytes",   "peak_rss_bytes",
                                             "rank_max_step_s_mean", "samples",
                                             "samples_per_s",        "samples_per_s_wall",
                                             "step_s_mean",          "step_s_p50",
                                             "step_s_p95",           "steps_done",
                                             "time_checkpoint_s",    "time_eval_s",
                                             "time_launch_s",        "time_load_s",
                                             "time_setup_s",         "time_to_target_s",
                                             "time_train_s",         "wall_s"};
  return f;
}

// Shown with about four significant digits: accuracies and shares need decimals, throughput not.
Cell metric_cell(double v) {
  const double a = std::fabs(v);
  return number_cell(v, a >= 1000 ? 0 : a >= 10 ? 2 : 4);
}

// The rows of the jobs table in their order: by the varying parameters, or by --sort (ties and
// jobs without the metric, which come last, in the usual order), the first opts.top of them.
std::vector<const JobRecord*> ordered_jobs(const JobRefs& jobs, const std::vector<std::string>& vary,
                                           const std::optional<JobSort>& sort, std::size_t top) {
  const std::size_t n = jobs.size(), m = vary.size();
  // Each job's keys and id copied once into flat arrays: the sort compares n log n times, and at
  // 100,000 jobs a compare that follows pointers into the loaded records misses the CPU's cache.
  std::vector<SortKey> keys;
  keys.reserve(n * m);
  std::vector<std::string> ids;
  ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& k : vary) keys.push_back(sort_key(value_of(*jobs[i], k)));
    ids.push_back(jobs[i]->id);
  }
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (std::size_t q = 0; q < m; ++q) {
      const SortKey& x = keys[a * m + q];
      const SortKey& y = keys[b * m + q];
      if (x.text != y.text) return x.numeric && y.numeric ? x.num < y.num : x.text < y.text;
    }
    return ids[a] < ids[b];
  });
  if (sort) {
    std::vector<std::pair<double, std::size_t>> by;
    by.reserve(n);
    for (const std::size_t i : order) by.emplace_back(sort_value(*jobs[i], sort->metric), i);
    std::stable_sort(by.begin(), by.end(), [&](const auto& a, const auto& b) {
      const bool an = std::isnan(a.first), bn = std::isnan(b.first);
      if (an || bn) return !an && bn;
      return sort->descending ? a.first > b.first : a.first < b.first;
    });
    for (std::size_t k = 0; k < n; ++k) order[k] = by[k].second;
  }
  if (top > 0 && order.size() > top) order.resize(top);
  std::vector<const JobRecord*> out;
  out.reserve(order.size());
  for (const std::size_t i : order) out.push_back(jobs[i]);
  return out;
}

Table per_job_table(const JobRefs& jobs, const std::vector<std::string>& vary,
                    const std::optional<JobSort>& sort = std::nullopt, std::size_t top = 0,
                    std::size_t max_rows = 0) {
  Table t;
  t.title = "Jobs";
  t.columns = {"id"};
  // A varying `epochs` (planned) shares the epochs column (done) as "done/planned": two columns
  // both headed "epochs" read as one shown twice (issue 58).
  const bool planned_epochs = std::find(vary.begin(), vary.end(), "epochs") != vary.end();
  for (const auto& k : vary)
    if (k != "epochs") t.columns.push_back(abbrev(k));
  // A --sort metric the table does not show gets a column of its own, right after status.
  const bool metric_column = sort && !shown_in_table(sort->metric);
  t.columns.push_back("status");
  if (metric_column) t.columns.push_back(sort->metric);
  for (const char* c : {"epochs", "test_acc", "samples/s", "p50_ms", "p95_ms", "comm%", "util% mean(min-max)",
                        "power_W mean(max)", "peak_mem"})
    t.columns.push_back(c);
  std::vector<const JobRecord*> sorted = ordered_jobs(jobs, vary, sort, top);
  // At most max_rows: the first ones in this order, then every failed or diverged one (never hidden).
  std::size_t not_shown = 0;
  if (max_rows > 0 && sorted.size() > max_rows) {
    std::size_t keep = max_rows;
    for (std::size_t k = max_rows; k < sorted.size(); ++k) {
      if (sorted[k]->status == "failed" || sorted[k]->status == "diverged")
        sorted[keep++] = sorted[k];
      else
        ++not_shown;
    }
    sorted.resize(keep);
  }
  for (const JobRecord* row : sorted) {
    const JobRecord& j = *row;
    std::vector<Cell> r = {text_cell(j.id)};
    for (const auto& k : vary) {
      if (k == "epochs") continue;
      auto v = param_value(j.params, k);
      bool num = v && (std::holds_alternative<std::int64_t>(*v) || std::holds_alternative<double>(*v));
      Cell c = text_cell(value_of(j, k).empty() ? "-" : value_of(j, k));
      if (num) {
        c.numeric = true;
        c.value = std::strtod(c.text.c_str(), nullptr);
      }
      r.push_back(c);
    }
    r.push_back(text_cell(j.status));
    if (metric_column) r.push_back(metric_cell(sort_value(j, sort->metric)));
    Cell epochs = number_cell(fig(j, "epochs_done"), 0);
    if (planned_epochs) epochs.text += "/" + (value_of(j, "epochs").empty() ? "-" : value_of(j, "epochs"));
    r.push_back(epochs);
    r.push_back(number_cell(fig(j, "final_test_acc"), 3));
    r.push_back(number_cell(fig(j, "samples_per_s"), 1));
    r.push_back(number_cell(fig(j, "step_s_p50") * 1e3, 2));
    r.push_back(number_cell(fig(j, "step_s_p95") * 1e3, 2));
    r.push_back(number_cell(fig(j, "comm_share") * 100, 1));
    std::string u = is_gpu_job(j) ? "gpu_util_pct" : "cpu_util_pct";
    Cell util = number_cell(fig(j, u + "_mean"), 0);
    if (!std::isnan(util.value))
      util.text += " (" + fmt(fig(j, u + "_min"), 0) + "-" + fmt(fig(j, u + "_max"), 0) + ")";
    r.push_back(util);
    Cell power = number_cell(fig(j, "gpu_power_w_mean"), 0);
    if (!std::isnan(power.value)) power.text += " (" + fmt(fig(j, "gpu_power_w_max"), 0) + ")";
    r.push_back(power);
    double mem = is_gpu_job(j) ? fig(j, "peak_gpu_mem_bytes") : fig(j, "peak_rss_bytes");
    r.push_back(Cell{human_bytes(mem), mem, kNaN, true});
    t.rows.push_back(r);
  }
  // Why each failed job failed, right under the rows (the runner's message; load_run filled it from
  // the job's log when the results file has none): a note, so that the table keeps its width.
  for (const JobRecord* j : sorted)
    if (j->status == "failed")
      t.notes.push_back("failed " + j->id + ": " +
                        (j->exit_reason.empty() ? "no reason recorded" : j->exit_reason));
  t.notes.push_back(
      "util%: GPU utilization for GPU jobs, process CPU % (100 = one core, mean over "
      "ranks) for CPU jobs; peak_mem: GPU memory for GPU jobs, else RSS.");
  t.notes.push_back("p50/p95: step time after the warm-up steps; comm%: communication / step time.");
  if (not_shown > 0)
    t.notes.push_back(std::to_string(not_shown) + " of " + std::to_string(jobs.size()) +
                      " jobs not shown (the first " + std::to_string(max_rows) +
                      " in this order and every failed one are): --rows 0 shows all, --format csv has "
                      "every row, --sort METRIC --top N the best N.");
  if (sort) {
    std::string note = "sorted by " + sort->metric + ", " + (sort->descending ? "largest" : "smallest") +
                       " first (jobs without it last)";
    if (sorted.size() < jobs.size())
      note += "; the first " + std::to_string(sorted.size()) + " of " + std::to_string(jobs.size()) +
              " jobs (--top " + std::to_string(top) + ")";
    t.notes.push_back(note + ".");
  }
  return t;
}

// Jobs grouped by every varying key except `except`; keys are the group's column values.
std::map<std::vector<std::string>, std::vector<const JobRecord*>> group_except(
    const JobRefs& jobs, const std::vector<std::string>& keys) {
  std::map<std::vector<std::string>, std::vector<const JobRecord*>> g;
  for (const JobRecord* j : jobs) {
    std::vector<std::string> key;
    for (const auto& k : keys) key.push_back(value_of(*j, k));
    g[key].push_back(j);
  }
  return g;
}

std::vector<std::string> minus(const std::vector<std::string>& keys, const std::set<std::string>& drop) {
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (!drop.count(k)) out.push_back(k);
  return out;
}

void add_key_cells(std::vector<Cell>& r, const std::vector<std::string>& key) {
  for (const auto& v : key) {
    Cell c = text_cell(v.empty() ? "-" : v);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (!v.empty() && !*end) {
      c.numeric = true;
      c.value = x;
    }
    r.push_back(c);
  }
}

Table scaling_table(const JobRefs& jobs, const std::vector<std::string>& vary) {
  Table t;
  t.title = "Scaling over ranks";
  std::vector<std::string> cols = minus(vary, {"ranks", "seed", "global_batch", "batch_per_rank"});
  t.columns = {"mode"};
  for (const auto& k : cols) t.columns.push_back(abbrev(k));
  for (const char* c : {"batch", "ranks", "seeds", "samples/s", "speed-up", "efficiency"})
    t.columns.push_back(c);
  for (const char* mode : {"weak", "strong"}) {
    bool weak = std::string(mode) == "weak";
    std::string fixed = weak ? "batch_per_rank" : "global_batch";
    std::vector<std::string> key = cols;
    key.push_back(fixed);
    for (const auto& [gkey, members] : group_except(jobs, key)) {
      std::map<double, std::vector<double>> by_ranks;
      for (const JobRecord* j : members) {
        if (!j->params) continue;
        const double r = static_cast<double>(j->params->ranks);
        by_ranks[r].push_back(fig(*j, "samples_per_s"));
      }
      if (by_ranks.size() < 2) continue;
      double r0 = by_ranks.begin()->first;
      Agg base = agg(by_ranks.begin()->second);
      for (const auto& [r, thr] : by_ranks) {
        Agg a = agg(thr);
        std::vector<Cell> row = {text_cell(mode)};
        add_key_cells(row, std::vector<std::string>(gkey.begin(), gkey.end() - 1));
        Cell b = text_cell((weak ? "bpr=" : "gb=") + (gkey.back().empty() ? "-" : gkey.back()));
        row.push_back(b);
        row.push_back(number_cell(r, 0));
        row.push_back(number_cell(static_cast<double>(thr.size()), 0));
        row.push_back(agg_cell(a, 1));
        double speedup = a.mean / base.mean;
        row.push_back(number_cell(speedup, 2));
        row.push_back(number_cell(speedup * r0 / r, 2));
        t.rows.push_back(row);
      }
    }
  }
  t.notes.push_back(
      "weak: fixed batch per rank; strong: fixed global batch. Speed-up and efficiency "
      "relative to the fewest ranks in the group (1 when present); ± = 95% CI over 3 or more seeds (n=2: no "
      "interval).");
  return t;
}

Table device_table(const JobRefs& jobs, const std::vector<std::string>& vary) {
  Table t;
  t.title = "GPU vs CPU";
  std::vector<std::string> cols = minus(vary, {"device", "seed"});
  for (const auto& k : cols) t.columns.push_back(abbrev(k));
  for (const char* c : {"cpu samples/s", "gpu samples/s", "speed-up", "cpu acc", "gpu acc", "acc diff"})
    t.columns.push_back(c);
  for (const auto& [gkey, members] : group_except(jobs, cols)) {
    std::vector<double> thr[2], acc[2];
    for (const JobRecord* j : members) {
      const auto d = device_of(j->params);
      if (!d) continue;
      const int k = *d == gj::Device::gpu ? 1 : 0;
      thr[k].push_back(fig(*j, "samples_per_s"));
      acc[k].push_back(fig(*j, "final_test_acc"));
    }
    if (thr[0].empty() || thr[1].empty()) continue;
    std::vector<Cell> row;
    add_key_cells(row, gkey);
    Agg tc = agg(thr[0]), tg = agg(thr[1]), ac = agg(acc[0]), ag = agg(acc[1]);
    row.push_back(agg_cell(tc, 1));
    row.push_back(agg_cell(tg, 1));
    row.push_back(number_cell(tg.mean / tc.mean, 2));
    row.push_back(agg_cell(ac, 3));
    row.push_back(agg_cell(ag, 3));
    row.push_back(number_cell(ag.mean - ac.mean, 3));
    t.rows.push_back(row);
  }
  if (t.columns.size() == 6) t.columns.insert(t.columns.begin(), "group");
  if (cols.empty())
    for (auto& r : t.rows) r.insert(r.begin(), text_cell("all"));
  t.notes.push_back("speed-up = gpu / cpu throughput; acc diff = gpu - cpu final test accuracy.");
  return t;
}

Table convergence_table(const JobRefs& jobs, const std::vector<std::string>& vary) {
  Table t;
  t.title = "Convergence";
  std::vector<std::string> cols = minus(vary, {"seed"});
  for (const auto& k : cols) t.columns.push_back(abbrev(k));
  for (const char* c : {"seeds", "target", "reached", "epochs_to_target", "time_to_target_s", "final_acc"})
    t.columns.push_back(c);
  for (const auto& [gkey, members] : group_except(jobs, cols)) {
    std::vector<double> ep, tt, acc;
    std::size_t reached = 0;
    double target = kNaN;
    for (const JobRecord* j : members) {
      double e = fig(*j, "epochs_to_target");
      if (!std::isnan(e)) ++reached;
      ep.push_back(e);
      tt.push_back(fig(*j, "time_to_target_s"));
      acc.push_back(fig(*j, "final_test_acc"));
      if (std::isnan(target)) target = fig(*j, "target_accuracy");
    }
    std::vector<Cell> row;
    add_key_cells(row, gkey);
    row.push_back(number_cell(static_cast<double>(members.size()), 0));
    row.push_back(number_cell(target, 3));
    row.push_back(
        text_cell(std::isnan(target) ? "-" : std::to_string(reached) + "/" + std::to_string(members.size())));
    row.push_back(agg_cell(agg(ep), 1));
    row.push_back(agg_cell(agg(tt), 1));
    row.push_back(agg_cell(agg(acc), 3));
    t.rows.push_back(row);
  }
  if (cols.empty()) {
    t.columns.insert(t.columns.begin(), "group");
    for (auto& r : t.rows) r.insert(r.begin(), text_cell("all"));
  }
  t.notes.push_back(
      "epochs/time to target: first evaluation at or above the target (mean over the "
      "seeds that reached it); final_acc: last test accuracy; ± = 95% CI over 3 or more seeds (n=2: no "
      "interval).");
  return t;
}

Table phase_table(const std::vector<PhaseFigures>& phases) {
  Table t;
  t.title = "Phases (one arrangement each)";
  bool predicted = false;
  for (const auto& p : phases) predicted = predicted || std::isfinite(p.predicted_makespan_s);
  bool loaded = false;
  for (const auto& p : phases) loaded = loaded || std::isfinite(p.other_cpu_share);
  t.columns = {"phase", "jobs", "ran", "makespan_s", "samples/s", "util%", "launch%", "time_to_target_s"};
  if (loaded) t.columns.push_back("other%");
  if (predicted) t.columns.insert(t.columns.begin() + 4, "predicted_s");
  for (const auto& p : phases) {
    const std::string ran = !p.unmeasured.empty() ? "not measured" : p.arrangement;
    t.rows.push_back({text_cell(p.label), number_cell(static_cast<double>(p.jobs.size()), 0), text_cell(ran),
                      number_cell(p.makespan_s, 1), number_cell(p.samples_per_s, 1),
                      number_cell(100 * p.util_mean, 1),
                      number_cell(p.unmeasured.empty() ? 100 * p.time.launch_share : std::nan(""), 0),
                      number_cell(p.time_to_target_s, 1)});
    if (loaded) t.rows.back().push_back(number_cell(100 * p.other_cpu_share, 0));
    if (predicted) t.rows.back().insert(t.rows.back().begin() + 4, number_cell(p.predicted_makespan_s, 1));
    if (!p.unmeasured.empty())
      t.notes.push_back(p.label + ": not measured: " + p.unmeasured + " (see the verdict).");
  }
  t.notes.push_back(
      "Makespan of the phase (state.json of `gridrun run`; for Slurm runs the job files' start "
      "and end times), aggregate throughput of its jobs, mean utilization, the share of its jobs' "
      "core- or GPU-seconds spent before their first training step (launch%: mpirun/srun, process "
      "start, library and data load; see \"Where the time went\"), predicted_s (what a calibrated "
      "`gridrun simulate` predicted, when it did), time from the phase's start until its last job "
      "reached target_accuracy (- if one did not), and other% (the share of the machine's CPU that "
      "went to processes outside the run while the phase ran; above 20 % the verdict calls it disturbed).");
  return t;
}

// A training run whose loss ends at ln(classes) (what a network that predicts the uniform
// distribution scores) or turns NaN/inf has learned nothing, whatever its throughput figures say;
// the report says so under the per-job table instead of letting a user read the speed of a dead
// run. Classes: 10 for every image set and synthetic; text sets have their own count, so only the
// NaN/inf check applies to them.
constexpr double kChanceLossTolerance = 0.03;  // within 3 % of ln(10): 2.234-2.372
constexpr double kChanceAccuracy = 0.15;       // 10 classes: chance is 0.10
std::vector<std::string> learning_warnings(const JobRefs& jobs) {
  std::vector<std::string> out;
  for (const JobRecord* jp : jobs) {
    const JobRecord& j = *jp;
    if ((j.params && j.params->task == base::Task::inference) || std::isnan(fig(j, "final_test_acc")))
      continue;
    const double loss = fig(j, "final_train_loss");
    const bool text = value_of(j, "dataset") == "text";
    const double chance = std::log(10.0);
    if (!std::isfinite(loss))
      out.push_back("warning: job " + j.id + ": training loss is " +
                    (std::isnan(loss) ? std::string("NaN")
                     : loss > 0       ? "inf"
                                      : "-inf") +
                    " (diverged; try a smaller lr)");
    // Only a loss near ln(10) with the test accuracy at chance: a loss far above it (a few steps
    // of a large model: 4.56, issue 58) is not "at ln(10)", and a loss near it with a test
    // accuracy above chance is a run that is learning.
    else if (!text && std::fabs(loss - chance) <= kChanceLossTolerance * chance &&
             fig(j, "final_test_acc") <= kChanceAccuracy)
      out.push_back("warning: job " + j.id + ": training loss " + fmt(loss, 4) +
                    " stayed at ln(10) = 2.3026 and test accuracy " + fmt(fig(j, "final_test_acc"), 3) +
                    " at chance: it did not learn (try a smaller lr)");
  }
  return out;
}

std::vector<Table> tables_for(const JobRefs& jobs, const std::vector<PhaseFigures>& phases,
                              const std::string& suffix, const std::optional<JobSort>& sort, std::size_t top,
                              std::size_t max_rows) {
  std::vector<Table> out;
  std::vector<std::string> vary = varying_keys(jobs);
  out.push_back(per_job_table(jobs, vary, sort, top, max_rows));
  JobRefs done;
  for (const JobRecord* j : jobs)
    if (finished(*j)) done.push_back(j);
  // What varies among the finished jobs: the same as among all when every job finished.
  const std::vector<std::string> vdone = done.size() == jobs.size() ? vary : varying_keys(done);
  std::vector<std::string> omitted;
  Table s = scaling_table(done, vdone);
  if (!s.rows.empty())
    out.push_back(s);
  else
    omitted.push_back("scaling (no finished jobs differing only in ranks)");
  Table d = device_table(done, vdone);
  if (!d.rows.empty())
    out.push_back(d);
  else
    omitted.push_back("GPU vs CPU (no finished jobs differing only in device)");
  bool any_acc = false;
  for (const JobRecord* j : done) any_acc |= !std::isnan(fig(*j, "final_test_acc"));
  if (any_acc)
    out.push_back(convergence_table(done, vdone));
  else
    omitted.push_back("convergence (no finished job with a test accuracy)");
  if (!phases.empty()) out.push_back(phase_table(phases));
  if (done.size() < jobs.size())
    out[0].notes.push_back(std::to_string(jobs.size() - done.size()) +
                           " job(s) not completed are left out of the comparisons.");
  for (const auto& o : omitted) out[0].notes.push_back("not shown: " + o);
  for (const auto& w : learning_warnings(jobs)) out[0].notes.push_back(w);
  for (auto& t : out) t.title += suffix;
  return out;
}

}  // namespace

const std::vector<std::string>& sort_column_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& c : sort_columns()) n.emplace_back(c.name);
    return n;
  }();
  return names;
}

bool sorts_descending(const std::string& metric) {
  if (const SortColumn* c = sort_column(metric)) return c->descending;
  std::vector<std::string> words;
  std::size_t start = 0;
  while (true) {
    const auto cut = metric.find('_', start);
    words.push_back(metric.substr(start, cut == std::string::npos ? std::string::npos : cut - start));
    if (cut == std::string::npos) break;
    start = cut + 1;
  }
  auto has = [&](const char* w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  for (const char* cost : {"loss", "latency", "energy", "bytes", "mem", "comm", "time", "target", "foreign",
                           "throttled", "temp"})
    if (has(cost)) return false;
  if (has("per")) return true;      // a rate: samples_per_s, flops_per_s
  return !(has("s") || has("ms"));  // a time: wall_s, step_s_p50
}

JobSort parse_job_sort(const std::string& text, const std::vector<JobRecord>& jobs) {
  JobSort sort;
  sort.metric = text;
  std::optional<bool> descending;
  if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    const std::string way = text.substr(colon + 1);
    if (way != "asc" && way != "desc")
      throw std::invalid_argument("--sort " + text + ": expected METRIC or METRIC:asc|desc, not ':" + way +
                                  "'");
    descending = way == "desc";
    sort.metric = text.substr(0, colon);
  }
  if (sort.metric.empty())
    throw std::invalid_argument("--sort " + text + ": no metric (e.g. --sort test_acc or --sort wall_s:asc)");
  std::set<std::string> figures(written_figures().begin(), written_figures().end());
  for (const auto& j : jobs)
    for (const auto& f : j.summary) figures.insert(f.first);
  if (!sort_column(sort.metric) && !figures.count(sort.metric)) {
    std::vector<std::string> names = sort_column_names();
    names.insert(names.end(), figures.begin(), figures.end());
    const std::string hint = gj::closest_name(sort.metric, names);
    std::string columns, summary;
    for (const auto& c : sort_column_names()) columns += (columns.empty() ? "" : ", ") + c;
    for (const auto& f : figures) summary += (summary.empty() ? "" : ", ") + f;
    throw std::invalid_argument("--sort " + text + ": unknown metric '" + sort.metric + "'" +
                                (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                " (expected a column of the jobs table: " + columns +
                                "; or a /summary figure: " + summary + ")");
  }
  sort.descending = descending ? *descending : sorts_descending(sort.metric);
  return sort;
}

double sort_value(const JobRecord& job, const std::string& metric) {
  if (const SortColumn* c = sort_column(metric))
    return fig(job, c->gpu_figure && is_gpu_job(job) ? c->gpu_figure : c->figure);
  return fig(job, metric);
}

JobRefs select_job_refs(const std::vector<JobRecord>& all, const ReportOptions& opts) {
  // The parameter names once (not per job: 100,000 jobs made them 5 million set inserts), a
  // command grid's own (params:) from each job that has them; user_params itself is no key.
  std::set<std::string> known = {"id", "status"};
  if (std::any_of(all.begin(), all.end(), [](const JobRecord& j) { return j.params.has_value(); }))
    for (const auto& spec : gj::param_table())
      if (spec.name != "user_params") known.insert(spec.name);
  for (const auto& j : all)
    if (j.params && !j.params->user_params.empty())
      for (const auto& [name, v] : gj::user_params_of(*j.params)) known.insert(name);
  auto known_list = [&] {
    std::string s;
    for (const auto& k : known) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  // A near miss names its fix ("rank" -> "ranks", the grid file's did-you-mean); anything else
  // lists what there is.
  auto unknown = [&](const std::string& k) {
    const std::string hint = gj::suggest_param(k);
    return "unknown key '" + k + "'" +
           (known.count(hint) ? "; did you mean '" + hint + "'?" : " (known: " + known_list() + ")");
  };
  // One selector for report --filter and run/plan/simulate/submit --only (jobs/select.hpp):
  // KEY=VALUE[,VALUE...], values compared as the parameter's type, did-you-mean for a bad key.
  std::vector<gj::Selector> filters;
  for (const auto& [k, v] : opts.filters)
    filters.push_back(gj::parse_selector(k + "=" + v, "--filter", {"id", "status"}));
  for (const auto& f : filters)
    if (f.own && !known.count(f.key))
      throw std::invalid_argument(opts.filter_flag + " " + f.text + ": " + unknown(f.key));
  if (!opts.group_by.empty() && !known.count(opts.group_by))
    throw std::invalid_argument("--group-by " + opts.group_by + ": " + unknown(opts.group_by));
  JobRefs jobs;
  jobs.reserve(all.size());
  for (const auto& j : all)
    if (filters.empty() || gj::matches_all(filters, [&](const std::string& k) { return value_of(j, k); }))
      jobs.push_back(&j);
  return jobs;
}

JobRefs jobs_in_table_order(const std::vector<JobRecord>& all, const ReportOptions& opts) {
  std::optional<JobSort> sort;
  if (!opts.sort.empty()) sort = parse_job_sort(opts.sort, all);
  const JobRefs jobs = select_job_refs(all, opts);
  return ordered_jobs(jobs, varying_keys(jobs), sort, opts.top);
}

std::vector<JobRecord> select_jobs(const std::vector<JobRecord>& all, const ReportOptions& opts) {
  std::vector<JobRecord> out;
  for (const JobRecord* j : select_job_refs(all, opts)) out.push_back(*j);
  return out;
}

std::vector<Table> build_tables(const std::vector<JobRecord>& all, const std::vector<PhaseFigures>& phases,
                                const ReportOptions& opts) {
  // --sort is checked against every job's figures before the selection: a metric is valid or not
  // whatever --only keeps.
  std::optional<JobSort> sort;
  if (!opts.sort.empty()) sort = parse_job_sort(opts.sort, all);
  const JobRefs jobs = select_job_refs(all, opts);
  if (jobs.empty()) {
    Table t;
    t.title = "Jobs";
    t.columns = {"id"};
    t.notes.push_back(all.empty() ? "no job files found" : "no job matches the filters");
    return {t};
  }
  if (opts.group_by.empty()) return tables_for(jobs, phases, "", sort, opts.top, opts.max_job_rows);
  std::map<std::string, JobRefs> groups;
  for (const JobRecord* j : jobs) groups[value_of(*j, opts.group_by)].push_back(j);
  std::vector<std::string> values;
  for (const auto& [v, g] : groups) values.push_back(v);
  std::sort(values.begin(), values.end(), value_less);
  std::vector<Table> out;
  for (const auto& v : values) {
    auto t = tables_for(groups[v], {}, " [" + opts.group_by + "=" + (v.empty() ? "-" : v) + "]", sort,
                        opts.top, opts.max_job_rows);
    out.insert(out.end(), t.begin(), t.end());
  }
  if (!phases.empty()) out.push_back(phase_table(phases));
  return out;
}

namespace {

// Where the jobs' time went: per phase, or for all jobs of a run without phases.
Table time_table(const LoadedRun& run) {
  Table t;
  t.title = "Where the time went (mean per job)";
  t.columns = {"phase", "jobs", "wait_s", "launch_s", "train_s", "eval_s", "checkpoint_s", "launch%"};
  auto row = [&](const std::string& label, const TimeSummary& s) {
    t.rows.push_back({text_cell(label), number_cell(static_cast<double>(s.jobs), 0),
                      number_cell(s.mean.wait_s, 1), number_cell(s.mean.launch_s, 2),
                      number_cell(s.mean.train_s, 2), number_cell(s.mean.eval_s, 2),
                      number_cell(s.mean.checkpoint_s, 2), number_cell(100 * s.launch_share, 0)});
  };
  if (!run.phases.empty()) {
    int known = 0;
    for (const auto& p : run.phases) known += p.time.jobs;
    if (known == 0) return t;  // files from before these figures
    for (const auto& p : run.phases) row(p.label, p.time);
  } else {
    std::vector<TimeSplit> splits;
    for (const auto& d : run.data) splits.push_back(time_split(d));
    const TimeSummary s = summarize_times(splits);
    if (s.jobs == 0) return t;
    t.columns[0] = "jobs of";
    row("all", s);
  }
  t.notes.push_back(
      "From the job files' /summary (the attempt that finished): wait = phase start to launch; launch = "
      "launcher start (mpirun/srun) to the first training step (process start, library load, data and "
      "model set-up); train, eval, checkpoint = seconds of each after it; launch% = share of the jobs' "
      "core- or GPU-seconds spent launching.");
  return t;
}

}  // namespace

Table verdict_table(const std::vector<std::string>& lines, const std::string& format) {
  Table t;
  t.title = "Verdict";
  if (format == "table" || format == "markdown") {
    t.notes = lines;  // a paragraph
  } else {
    t.columns = {"verdict"};
    for (const auto& l : lines) t.rows.push_back({text_cell(l)});
  }
  return t;
}

std::vector<Table> run_tables(const LoadedRun& run, const ReportOptions& opts) {
  std::vector<Table> out;
  const auto verdict = verdict_lines(run.phases, VerdictOptions{run.compare_by, run.rerun_prefix});
  if (!verdict.empty()) out.push_back(verdict_table(verdict, opts.format));
  for (auto& t : build_tables(run.jobs, run.phases, opts)) out.push_back(std::move(t));
  if (Table t = time_table(run); !t.rows.empty()) out.push_back(std::move(t));
  note_left_out(out, run, opts);
  return out;
}

void note_left_out(std::vector<Table>& tables, const LoadedRun& run, const ReportOptions& opts) {
  if (run.left_out == 0) return;
  for (auto& t : tables)
    if (t.title.rfind("Jobs", 0) == 0) {
      t.notes.push_back(
          std::to_string(run.left_out) +
          " job(s) of the run directory are not in its current grid (grid.yaml) and are left out "
          "of every table; `gridrun report " +
          opts.input + " --all` shows them.");
      return;
    }
}

void render(const std::vector<Table>& tables, const ReportOptions& opts, std::ostream& out) {
  base::render_tables(tables, base::TableStyle{opts.format, opts.width}, out);
}

}  // namespace gridrun::report
