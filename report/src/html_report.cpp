// The HTML report (see html_report.hpp). C++ decides what each chart shows (or why it is left
// out) and writes it as a JSON block of chart specs; the page's small script only renders two
// kinds of spec with Chart.js: "xy" (lines and/or points on linear or log axes) and "bar".
// Keeping the decisions here means the chart counts are known to the CLI and tests, and the
// script has no data logic of its own: the ranges of log axes (whole decades around the data, so
// that two close points stay close) and which axes count things (integer ticks only) are decided
// here too; the script only places and labels the ticks.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/report/verdict.hpp"
#include "gridrun/run/run_dir.hpp"
#include "html_report.hpp"
#include "roofline.hpp"

namespace gridrun::report {

// Reports render results' records and job files; their vocabulary is used unqualified here.
using namespace gridrun::results;  // NOLINT(google-build-using-namespace)

namespace detail {
std::string chartjs_source();  // generated at build time from vendor/chartjs (embed_text.cmake)
std::string chartjs_license();
// report/assets/: the report's stylesheet, the error hook that runs before Chart.js (it collects
// script errors for the body's data-errors attribute) and the chart renderer (draws the JSON
// block's chart specs, see Chart::json, and reports on itself in <body>).
std::string report_css();
std::string error_hook_js();
std::string report_js();
}  // namespace detail

namespace {

namespace fs = std::filesystem;
using base::Cell;
using base::number_cell;
using base::Table;
using base::text_cell;
using results::JobData;
using results::JobRecord;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- JSON and HTML text ----------------------------------------------------------------------

// JSON that is also safe inside <script>: '<', '>' and '&' (which JSON has only inside strings)
// become \u escapes, so no string can close the script element.
std::string script_json(const base::Json& v) {
  std::string out;
  for (char c : base::dump_line(v)) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

// A series' values: 6 significant digits are what a chart can show, and keep pages small.
base::Json numbers(const std::vector<double>& v) {
  base::Json a = base::Json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? base::json_number(x, 6) : base::Json(nullptr));
  return a;
}

std::string html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// ---- chart specs -----------------------------------------------------------------------------

struct Series {
  std::string label;
  std::vector<double> x, y;
  int color = 0;
  bool line = true, points = false, dash = false;
};

struct BarSet {
  std::string label;
  std::vector<double> values;
  int color = 0;
  bool right_axis = false;
};

// An axis range; NaN ends: Chart.js chooses.
struct Range {
  double lo = kNaN, hi = kNaN;
};

struct Chart {
  std::string id, title, kind = "xy";  // "xy" | "bar"
  std::string name;                    // short, for the "not shown" line when it has no data
  std::string note;                    // non-empty: no data, left out for this reason (a phrase)
  std::string xlabel, ylabel, y1label;
  bool logx = false, logy = false, horizontal = false;
  bool xinteger = false;  // the x axis counts things (ranks): integer ticks only
  Range xrange, yrange;   // set for log axes (log_ranges)
  std::vector<Series> series;
  std::vector<std::string> labels;  // bar categories
  std::vector<BarSet> bars;
  std::vector<std::string> notes;  // shown under a drawn chart

  std::string json() const {
    base::Json all_series = base::Json::array(), all_bars = base::Json::array();
    for (const Series& v : series)
      all_series.push_back({{"label", v.label},
                            {"x", numbers(v.x)},
                            {"y", numbers(v.y)},
                            {"color", v.color},
                            {"line", v.line},
                            {"points", v.points},
                            {"dash", v.dash}});
    for (const BarSet& b : bars)
      all_bars.push_back(
          {{"label", b.label}, {"values", numbers(b.values)}, {"color", b.color}, {"right", b.right_axis}});
    auto end = [](double v) { return std::isfinite(v) ? base::json_number(v, 6) : base::Json(nullptr); };
    return script_json({{"id", id},
                        {"title", title},
                        {"kind", kind},
                        {"note", note},
                        {"xlabel", xlabel},
                        {"ylabel", ylabel},
                        {"y1label", y1label},
                        {"logx", logx},
                        {"logy", logy},
                        {"xinteger", xinteger},
                        {"xmin", end(xrange.lo)},
                        {"xmax", end(xrange.hi)},
                        {"ymin", end(yrange.lo)},
                        {"ymax", end(yrange.hi)},
                        {"horizontal", horizontal},
                        {"notes", notes},
                        {"labels", labels},
                        {"series", std::move(all_series)},
                        {"bars", std::move(all_bars)}});
  }
};

// A chart with its header fields set (kind "xy" unless given); `name` is what the "not shown" line
// calls it.
Chart make_chart(const std::string& id, const std::string& name, const std::string& title,
                 const std::string& xlabel, const std::string& ylabel, const std::string& kind = "xy") {
  Chart c;
  c.id = id;
  c.name = name;
  c.title = title;
  c.xlabel = xlabel;
  c.ylabel = ylabel;
  c.kind = kind;
  return c;
}

// A log axis' range: whole decades around the positive values, at least one. A point within a
// 50th of a decade of a power of ten gets the next decade too, so that no point sits on the frame.
// Decades rather than the data's own range: on a range of 13-23 FLOP/byte (four jobs of one
// model) Chart.js puts the points at both ends of the axis, between powers of ten, with no label.
Range decade_range(const std::vector<double>& values) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (double v : values)
    if (std::isfinite(v) && v > 0) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!(hi > 0)) return {};
  constexpr double kMargin = 0.02;  // decades
  const double e0 = std::floor(std::log10(lo) - kMargin);
  const double e1 = std::max(e0 + 1, std::ceil(std::log10(hi) + kMargin));
  return {std::pow(10.0, e0), std::pow(10.0, e1)};
}

// Sets the range of every log axis not set yet from the chart's series.
void log_ranges(Chart& c) {
  std::vector<double> xs, ys;
  for (const Series& s : c.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  if (c.logx && !std::isfinite(c.xrange.lo)) c.xrange = decade_range(xs);
  if (c.logy && !std::isfinite(c.yrange.lo)) c.yrange = decade_range(ys);
}

bool any_finite(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Every k-th row so that at most `max` remain (always keeping the last one).
std::vector<std::size_t> thin(std::size_t n, int max) {
  std::vector<std::size_t> idx;
  if (n == 0) return idx;
  const std::size_t stride =
      std::max<std::size_t>(1, (n + static_cast<std::size_t>(max) - 1) / static_cast<std::size_t>(max));
  for (std::size_t k = 0; k < n; k += stride) idx.push_back(k);
  if (idx.back() != n - 1) idx.push_back(n - 1);
  return idx;
}

Series xy(const std::string& label, const std::vector<double>& x, const std::vector<double>& y, int max) {
  Series s;
  s.label = label;
  for (std::size_t k : thin(std::min(x.size(), y.size()), max)) {
    if (!std::isfinite(x[k]) || !std::isfinite(y[k])) continue;
    s.x.push_back(x[k]);
    s.y.push_back(y[k]);
  }
  return s;
}

// Row means (or sums) of a [rows x cols] matrix, NaN-aware.
std::vector<double> reduce_rows(const Matrix& m, bool sum) {
  std::vector<double> out(m.rows, kNaN);
  for (std::size_t r = 0; r < m.rows; ++r) {
    double acc = 0;
    std::size_t n = 0;
    for (std::size_t c = 0; c < m.cols; ++c)
      if (std::isfinite(m.at(r, c))) {
        acc += m.at(r, c);
        ++n;
      }
    if (n) out[r] = sum ? acc : acc / static_cast<double>(n);
  }
  return out;
}

// ---- jobs ------------------------------------------------------------------------------------

struct JobView {
  const JobRecord* rec = nullptr;
  JobData data;
  bool loaded = false;
  std::string label;
  int color = 0;
};

// Legend labels: the parameters that vary across the jobs (model and device bare, others k=v).
void label_jobs(std::vector<JobView>& jobs) {
  static const std::vector<std::string> first = {
      "model", "dataset", "task", "device", "ranks", "nodes", "batch_per_rank", "global_batch", "precision"};
  static const std::map<std::string, std::string> abbrev = {{"ranks", "r"},
                                                            {"nodes", "n"},
                                                            {"batch_per_rank", "bpr"},
                                                            {"global_batch", "gb"},
                                                            {"threads_per_rank", "t"}};
  std::vector<const RecordedParams*> params;
  for (const auto& j : jobs) params.push_back(&j.rec->params);
  std::vector<std::string> vary = varying_params(params);
  std::stable_sort(vary.begin(), vary.end(), [&](const std::string& a, const std::string& b) {
    auto ra = std::find(first.begin(), first.end(), a) - first.begin();
    auto rb = std::find(first.begin(), first.end(), b) - first.begin();
    return ra < rb;
  });
  std::map<std::string, int> seen;
  for (auto& j : jobs) {
    std::string l;
    for (const auto& k : vary) {
      std::string v = param_text(j.rec->params, k);
      auto a = abbrev.find(k);
      std::string part = (k == "model" || k == "device" || k == "task" || k == "dataset" || k == "precision")
                             ? v
                             : (a == abbrev.end() ? k : a->second) + "=" + v;
      l += (l.empty() ? "" : " ") + part;
    }
    if (l.size() > 48) l = l.substr(0, 45) + "...";
    if (l.empty()) l = j.rec->id;
    ++seen[l];
    j.label = l;
  }
  for (auto& j : jobs)
    if (seen[j.label] > 1) j.label += " (" + j.rec->id.substr(0, 6) + ")";
}

bool is_gpu(const JobView& j) { return device_of(j.rec->params) == jobs::Device::gpu; }

// Adds one job's series (thinned to `max` points, non-finite points dropped) in the job's color;
// a series left without points is not added. Returns whether it was.
bool add_job_series(Chart& c, const JobView& j, const std::vector<double>& x, const std::vector<double>& y,
                    int max, bool points = false) {
  Series s = xy(j.label, x, y, max);
  s.color = j.color;
  s.points = points;
  if (s.x.empty()) return false;
  c.series.push_back(std::move(s));
  return true;
}

// ---- the charts ------------------------------------------------------------------------------

Chart loss_chart(const std::vector<JobView>& jobs, int max) {
  Chart c = make_chart("loss", "Training loss", "Training loss vs wall time", "wall time (s)", "loss");
  for (const auto& j : jobs) {
    const auto* t = j.data.steps.column("wall_s");
    const auto* l = j.data.steps.column("loss");
    if (t && l) add_job_series(c, j, *t, *l, max);
  }
  if (c.series.empty()) c.note = "no step rows in the job files";
  return c;
}

Chart accuracy_chart(const std::vector<JobView>& jobs, int max) {
  Chart c =
      make_chart("accuracy", "Test accuracy", "Test accuracy vs wall time", "wall time (s)", "accuracy");
  bool used_train = false;
  for (const auto& j : jobs) {
    const auto* t = j.data.epochs.column("wall_s");
    const auto* a = j.data.epochs.column("test_acc");
    if (!t) continue;
    if (!a || !any_finite(*a)) {
      a = j.data.epochs.column("train_acc");
      if (a && any_finite(*a)) used_train = true;
    }
    if (a) add_job_series(c, j, *t, *a, max, true);
  }
  if (used_train) c.notes.push_back("Jobs without test evaluations show their training accuracy.");
  if (c.series.empty()) c.note = "no epoch rows with an accuracy (inference jobs, or no epoch finished)";
  return c;
}

int column_of(const Table& t, const std::string& name) {
  auto it = std::find(t.columns.begin(), t.columns.end(), name);
  return it == t.columns.end() ? -1 : static_cast<int>(it - t.columns.begin());
}

// "col=value ..." for the group columns of a comparison row (the mode and "bpr=.." cells, which
// name themselves, stay bare).
std::string join_cells(const Table& t, const std::vector<Cell>& row, int from, int to) {
  std::string s;
  for (int k = from; k < to; ++k) {
    const std::string& col = t.columns[static_cast<std::size_t>(k)];
    const std::string& v = row[static_cast<std::size_t>(k)].text;
    s += (s.empty() ? "" : " ") + (col == "mode" || col == "batch" || col == "group" ? v : col + "=" + v);
  }
  return s;
}

Chart scaling_chart(const std::vector<Table>& tables) {
  Chart c = make_chart("scaling", "Throughput vs ranks", "Throughput vs ranks (dashed: ideal linear scaling)",
                       "ranks", "samples/s");
  c.xinteger = true;
  int color = 0;
  for (const auto& t : tables) {
    if (t.title.rfind("Scaling over ranks", 0) != 0) continue;
    const std::string suffix = t.title.substr(std::string("Scaling over ranks").size());
    const int rc = column_of(t, "ranks"), tc = column_of(t, "samples/s");
    if (rc < 0 || tc < 0) continue;
    std::map<std::string, Series> groups;
    std::vector<std::string> order;
    for (const auto& row : t.rows) {
      std::string key = join_cells(t, row, 0, rc) + suffix;
      if (!groups.count(key)) {
        order.push_back(key);
        groups[key].label = key;
      }
      groups[key].x.push_back(row[static_cast<std::size_t>(rc)].value);
      groups[key].y.push_back(row[static_cast<std::size_t>(tc)].value);
    }
    for (const auto& key : order) {
      Series s = groups[key];
      s.color = color++;
      s.points = true;
      Series ideal;
      ideal.label = "ideal: " + key;
      ideal.color = s.color;
      ideal.dash = true;
      for (std::size_t k = 0; k < s.x.size(); ++k) {
        ideal.x.push_back(s.x[k]);
        ideal.y.push_back(s.y[0] * s.x[k] / s.x[0]);
      }
      c.series.push_back(s);
      c.series.push_back(ideal);
    }
  }
  if (c.series.empty()) c.note = "no finished jobs that differ only in ranks";
  return c;
}

Chart speedup_chart(const std::vector<Table>& tables) {
  Chart c = make_chart("speedup", "GPU vs CPU speed-up",
                       "GPU vs CPU speed-up (GPU samples/s / CPU samples/s)", "", "speed-up (x)", "bar");
  BarSet b;
  b.label = "speed-up";
  for (const auto& t : tables) {
    if (t.title.rfind("GPU vs CPU", 0) != 0) continue;
    const std::string suffix = t.title.substr(std::string("GPU vs CPU").size());
    const int cc = column_of(t, "cpu samples/s"), sc = column_of(t, "speed-up");
    if (cc < 0 || sc < 0) continue;
    for (const auto& row : t.rows) {
      c.labels.push_back(join_cells(t, row, 0, cc) + suffix);
      b.values.push_back(row[static_cast<std::size_t>(sc)].value);
    }
  }
  if (any_finite(b.values))
    c.bars.push_back(b);
  else
    c.note = "no finished jobs that differ only in device (cpu vs gpu)";
  return c;
}

Chart util_chart(const std::vector<JobView>& jobs, int max) {
  Chart c =
      make_chart("util", "Utilization timeline", "Utilization timeline", "time since job start (s)", "%");
  bool any_gpu = false, any_cpu = false;
  for (const auto& j : jobs) {
    const auto* t = j.data.util.column("time_s");
    if (!t) continue;
    auto gm = j.data.util.matrices.find("gpu_util_pct");
    auto cm = j.data.util.matrices.find("rank_cpu_pct");
    std::vector<double> y;
    if (is_gpu(j) && gm != j.data.util.matrices.end() && gm->second.cols) {
      y = reduce_rows(gm->second, false);
      any_gpu = true;
    } else if (cm != j.data.util.matrices.end() && cm->second.cols) {
      y = reduce_rows(cm->second, false);
      any_cpu = true;
    } else {
      continue;
    }
    add_job_series(c, j, *t, y, max);
  }
  if (any_gpu) c.notes.push_back("GPU jobs: GPU utilization, mean over the job's devices (NVML).");
  if (any_cpu) c.notes.push_back("CPU jobs: process CPU % (100 = one core busy), mean over ranks.");
  if (c.series.empty()) c.note = "no utilization samples in the job files (sampler off?)";
  return c;
}

Chart power_chart(const std::vector<JobView>& jobs, int max) {
  Chart c = make_chart("power", "GPU power timeline", "GPU power timeline (sum over the job's devices)",
                       "time since job start (s)", "W");
  std::set<std::string> reasons;
  for (const auto& j : jobs) {
    const auto* t = j.data.util.column("time_s");
    auto pm = j.data.util.matrices.find("gpu_power_w");
    if (!t || pm == j.data.util.matrices.end() || !pm->second.cols) {
      if (!j.data.gpu_absent_reason.empty()) reasons.insert(j.data.gpu_absent_reason);
      continue;
    }
    add_job_series(c, j, *t, reduce_rows(pm->second, true), max);
  }
  if (c.series.empty()) {
    std::string why;
    for (const auto& r : reasons) why += (why.empty() ? "" : "; ") + r;
    c.note = "this run has no GPU power samples" + (why.empty() ? std::string() : " (" + why + ")");
  }
  return c;
}

// One chart per quantity of the phases (makespan: lower is better; aggregate samples/s: higher is
// better; time to target: lower is better), one bar per arrangement, both axes titled. A phase
// that is not a measurement has no bar (its reason is in the verdict above the charts).
Chart phase_chart(const std::vector<PhaseFigures>& phases, const std::string& id, const std::string& name,
                  const std::string& title, const std::string& ylabel, double PhaseFigures::*field,
                  int color) {
  Chart c = make_chart(id, name, title, "arrangement (compare-by phase)", ylabel, "bar");
  BarSet b{ylabel, {}, color, false};
  for (const auto& p : phases) {
    c.labels.push_back(phase_title(p) + (p.unmeasured.empty() ? "" : " (not measured)"));
    b.values.push_back(p.*field);
  }
  if (any_finite(b.values)) c.bars.push_back(b);
  // The makespan a calibrated `gridrun simulate` predicted before the run, beside the measured one.
  if (field == &PhaseFigures::makespan_s && !c.bars.empty()) {
    BarSet pred{"predicted before the run (gridrun calibrate)", {}, 3, false};
    for (const auto& p : phases) pred.values.push_back(p.predicted_makespan_s);
    if (any_finite(pred.values)) {
      c.bars.front().label = "measured";
      c.bars.push_back(pred);
    }
  }
  if (c.bars.empty())
    c.note = phases.empty() ? "not a compare-by run (these charts compare its arrangements)"
                            : "no phase has this figure (see the verdict and the phase table)";
  return c;
}

Chart roofline_chart(const Roofline& r) {
  Chart c = make_chart("roofline", "Roofline", "Roofline (per GPU for GPU jobs, per job for CPU jobs)",
                       "arithmetic intensity (FLOP/byte)", "FLOP/s");
  c.logx = c.logy = true;
  c.notes = r.notes;
  if (r.points.empty()) {
    c.note = "no job has FLOP and byte figures";
    for (const auto& n : r.notes) c.note += "; " + n;
    return c;
  }
  // x: the points and the roofs' ridge points; y: the points and the roofs' peaks (a memory roof
  // runs off the bottom at low intensity, as in the usual drawings). The roofs span the x axis.
  std::vector<double> xs, ys;
  for (const auto& p : r.points) {
    xs.push_back(p.intensity);
    ys.push_back(p.flops_per_s);
  }
  for (const auto& roof : r.roofs) {
    if (roof.bandwidth > 0) xs.push_back(roof.peak_flops / roof.bandwidth);
    ys.push_back(roof.peak_flops);
  }
  c.xrange = decade_range(xs);
  c.yrange = decade_range(ys);
  const double lo = c.xrange.lo, hi = c.xrange.hi;
  int color = 0;
  for (const auto& roof : r.roofs) {
    Series s;
    s.label = "roof: " + roof.label;
    s.color = color++;
    s.dash = true;
    std::vector<double> at = {lo};
    if (roof.bandwidth > 0) at.push_back(roof.peak_flops / roof.bandwidth);
    at.push_back(hi);
    for (double x : at) {
      s.x.push_back(x);
      s.y.push_back(roof.bandwidth > 0 ? std::min(roof.peak_flops, roof.bandwidth * x) : roof.peak_flops);
    }
    c.series.push_back(s);
  }
  for (const auto& p : r.points) {
    Series s;
    s.label = p.label;
    s.color = color++;
    s.line = false;
    s.points = true;
    s.x = {p.intensity};
    s.y = {p.flops_per_s};
    c.series.push_back(s);
  }
  return c;
}

std::vector<Chart> operator_charts(const std::vector<JobView>& jobs, int max_jobs) {
  std::vector<Chart> out;
  int profiled = 0;
  for (const auto& j : jobs) {
    if (j.data.profile.empty()) continue;
    if (++profiled > max_jobs) continue;
    std::vector<OpProfile> ops = j.data.profile;
    const bool device =
        std::any_of(ops.begin(), ops.end(), [](const OpProfile& o) { return o.self_device_us > 0; });
    std::sort(ops.begin(), ops.end(), [&](const OpProfile& a, const OpProfile& b) {
      return device ? a.self_device_us > b.self_device_us : a.self_cpu_us > b.self_cpu_us;
    });
    if (ops.size() > 10) ops.resize(10);
    Chart c =
        make_chart("ops-" + j.rec->id, "Top operators of " + j.label,
                   "Top operators by self " + std::string(device ? "device" : "CPU") + " time: " + j.label,
                   "", "ms (summed over the profiled steps)", "bar");
    c.horizontal = true;
    BarSet cpu{"self CPU (ms)", {}, 0, false}, dev{"self device (ms)", {}, 1, false};
    for (const auto& o : ops) {
      c.labels.push_back(o.name + " (" + std::to_string(o.calls) + " calls)");
      cpu.values.push_back(o.self_cpu_us / 1e3);
      dev.values.push_back(o.self_device_us / 1e3);
    }
    c.bars.push_back(cpu);
    if (device) c.bars.push_back(dev);
    out.push_back(c);
  }
  if (profiled > max_jobs) {
    Chart note = make_chart(
        "ops-more", "Top operators of " + std::to_string(profiled - max_jobs) + " more profiled job(s)",
        "Top operators: more jobs", "", "");
    note.note = "the page charts the first " + std::to_string(max_jobs) +
                "; `gridrun report --profile` lists them all";
    out.push_back(note);
  }
  if (out.empty()) {
    Chart note = make_chart("ops", "Top operators", "Top operators", "", "");
    note.note = "no job recorded an operator profile (/profile): set profile_steps in the grid";
    out.push_back(note);
  }
  return out;
}

Table roofline_table(const Roofline& r) {
  Table t;
  t.title = "Roofline";
  t.columns = {"job", "FLOP/byte", "achieved GFLOP/s", "roof", "peak GFLOP/s", "% of peak"};
  auto num = [](double v, int prec) { return number_cell(std::isfinite(v) ? v : kNaN, prec); };
  for (const auto& p : r.points)
    t.rows.push_back({text_cell(p.label), num(p.intensity, 2), num(p.flops_per_s / 1e9, 2),
                      text_cell(p.roof.empty() ? "-" : p.roof), num(p.peak_flops / 1e9, 1),
                      num(100 * p.flops_per_s / p.peak_flops, 1)});
  t.notes = r.notes;
  return t;
}

// ---- page ------------------------------------------------------------------------------------

// The charts left out for want of data, one line per reason: "GPU power timeline: not shown, this
// run has no GPU power samples (cpu job)." (several charts with one reason share a line). Each
// line carries the ids of its charts (data-ids) for tests and tools.
std::string not_shown_html(const std::vector<Chart>& charts) {
  std::vector<std::string> reasons;
  std::map<std::string, std::vector<const Chart*>> by_reason;
  for (const auto& c : charts) {
    if (c.note.empty()) continue;
    if (!by_reason.count(c.note)) reasons.push_back(c.note);
    by_reason[c.note].push_back(&c);
  }
  if (reasons.empty()) return "";
  std::ostringstream o;
  o << "<section id=\"not-shown\">\n";
  for (const auto& why : reasons) {
    const auto& group = by_reason[why];
    std::string ids, names;
    for (std::size_t k = 0; k < group.size(); ++k) {
      std::string n = group[k]->name;
      // "Makespan, aggregate throughput and time to target": later names in lower case unless
      // they start with an acronym (GPU).
      if (k > 0 && n.size() > 1 && !std::isupper(static_cast<unsigned char>(n[1])))
        n[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(n[0])));
      names += (k == 0 ? "" : k + 1 == group.size() ? " and " : ", ") + n;
      ids += (k ? " " : "") + group[k]->id;
    }
    o << "<p class=\"not-shown\" data-ids=\"" << html(ids) << "\">" << html(names) << ": not shown, "
      << html(why) << ".</p>\n";
  }
  o << "</section>\n";
  return o.str();
}

std::string table_html(const Table& t) {
  std::ostringstream o;
  o << "<h3>" << html(t.title) << "</h3>\n<div class=\"scroll\"><table>\n<thead><tr>";
  for (const auto& c : t.columns) o << "<th>" << html(c) << "</th>";
  o << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    o << "<tr>";
    for (const auto& cell : row)
      o << (cell.numeric ? "<td class=\"n\">" : "<td>") << html(cell.text) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n";
  if (!t.notes.empty()) {
    o << "<ul class=\"tnotes\">";
    for (const auto& n : t.notes) o << "<li>" << html(n) << "</li>";
    o << "</ul>\n";
  }
  return o.str();
}

// The jobs whose time series are drawn, read whole: the jobs table's first --rows (all of them
// without a limit), in the selection's order. A page of 100,000 loss curves shows nothing and read
// every job file's tables (185 s at 100,000 jobs); the others stay in the tables. The ids of the
// files that could not be read go to `unreadable`.
std::vector<JobView> drawn_views(const LoadedRun& run, const std::vector<const JobRecord*>& selected,
                                 const ReportOptions& opts, std::vector<std::string>& unreadable) {
  std::set<const JobRecord*> pick;
  for (const JobRecord* r : jobs_in_table_order(run.jobs, opts))
    if (opts.max_job_rows == 0 || pick.size() < opts.max_job_rows) pick.insert(r);
  std::vector<const JobRecord*> recs;
  for (const JobRecord* r : selected)
    if (pick.count(r)) recs.push_back(r);
  std::vector<results::JobData> whole = read_whole_jobs(run, recs);
  std::vector<JobView> drawn(recs.size());
  for (std::size_t k = 0; k < recs.size(); ++k) {
    drawn[k].rec = recs[k];
    drawn[k].color = static_cast<int>(k);
    drawn[k].loaded = !whole[k].id.empty();
    if (drawn[k].loaded) {
      drawn[k].data = std::move(whole[k]);
    } else {
      unreadable.push_back(recs[k]->id);
      drawn[k].data.id = recs[k]->id;
    }
  }
  label_jobs(drawn);
  return drawn;
}

// Every selected job, to its summary (the roofline, the counts); the views take the loaded records
// over (call it after drawn_views, which copies from them): each selected id once, no copies.
std::vector<JobView> summary_views(LoadedRun& run, const std::vector<const JobRecord*>& selected) {
  std::map<std::string, JobData*> loaded;
  for (auto& d : run.data) loaded[d.id] = &d;
  std::vector<JobView> jobs(selected.size());
  for (std::size_t k = 0; k < selected.size(); ++k) {
    jobs[k].rec = selected[k];
    jobs[k].color = static_cast<int>(k);
    auto it = loaded.find(selected[k]->id);
    if (it != loaded.end()) {
      jobs[k].data = std::move(*it->second);
    } else {
      jobs[k].data.id = selected[k]->id;
      jobs[k].data.params = selected[k]->params;
      jobs[k].data.summary = selected[k]->summary;
    }
  }
  label_jobs(jobs);
  return jobs;
}

}  // namespace

void check_html_output(const std::string& output) {
  if (output.empty()) throw std::invalid_argument("--html: empty output path");
  const fs::path out_path = output;
  const fs::path parent = out_path.parent_path().empty() ? fs::path(".") : out_path.parent_path();
  if (!fs::is_directory(parent))
    throw std::invalid_argument("--html " + output + ": folder " + parent.string() + " does not exist");
}

HtmlReportResult write_html_report(LoadedRun run, const ReportOptions& opts) {
  check_html_output(opts.output);
  std::vector<Table> tables = build_tables(run.jobs, run.phases, opts);
  note_left_out(tables, run, opts);
  const std::vector<std::string> verdict =
      verdict_lines(run.phases, VerdictOptions{run.compare_by, run.rerun_prefix});
  const std::vector<const JobRecord*> selected = select_job_refs(run.jobs, opts);
  std::vector<std::string> unreadable;
  const std::vector<JobView> drawn = drawn_views(run, selected, opts, unreadable);
  const std::size_t not_drawn = selected.size() - drawn.size();
  const std::vector<JobView> jobs = summary_views(run, selected);
  std::vector<const JobData*> datas;
  std::vector<std::string> labels;
  for (const auto& j : jobs) {
    datas.push_back(&j.data);
    labels.push_back(j.label);
  }
  Roofline roof = build_roofline(datas, labels, opts.roofline);

  std::vector<Chart> charts = {
      loss_chart(drawn, opts.max_points),
      accuracy_chart(drawn, opts.max_points),
      scaling_chart(tables),
      speedup_chart(tables),
      util_chart(drawn, opts.max_points),
      power_chart(drawn, opts.max_points),
      phase_chart(run.phases, "phase_makespan", "Makespan", "Makespan per arrangement (lower is better)",
                  "makespan (s)", &PhaseFigures::makespan_s, 0),
      phase_chart(run.phases, "phase_throughput", "Aggregate throughput",
                  "Aggregate throughput per arrangement (higher is better)", "aggregate samples/s",
                  &PhaseFigures::samples_per_s, 1),
      phase_chart(run.phases, "phase_target", "Time to target",
                  "Time to target accuracy per arrangement (lower is better)", "time to target (s)",
                  &PhaseFigures::time_to_target_s, 2),
      roofline_chart(roof)};
  for (auto& c : operator_charts(drawn, opts.max_profiled_jobs)) charts.push_back(c);
  if (not_drawn > 0)
    for (auto& c : charts)
      if (c.note.empty() && (c.id == "loss" || c.id == "accuracy" || c.id == "util" || c.id == "power"))
        c.notes.push_back("The first " + std::to_string(drawn.size()) + " of " +
                          std::to_string(selected.size()) +
                          " jobs in the jobs table's order (--rows N draws N, --rows 0 all; --filter, --sort "
                          "and --top choose which).");
  for (auto& c : charts) log_ranges(c);
  if (!roof.points.empty()) tables.push_back(roofline_table(roof));

  HtmlReportResult result;
  result.jobs = static_cast<int>(jobs.size());
  for (const auto& c : charts) (c.note.empty() ? result.charts : result.notes)++;

  std::map<std::string, int> by_status;
  std::string run_name;
  for (const auto& j : jobs) {
    ++by_status[j.rec->status];
    if (run_name.empty()) run_name = j.data.run;
  }
  if (run_name.empty()) run_name = fs::path(run::RunDir(run.run_dir).root()).filename().string();
  std::string status_line;
  for (const auto& [s, n] : by_status)
    status_line += (status_line.empty() ? "" : ", ") + std::to_string(n) + " " + s;

  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>gridrun report: " << html(run_name) << "</title>\n<style>" << detail::report_css()
       << "</style>\n"
       << "<script>" << detail::error_hook_js() << "</script>\n"
       << "<!-- Chart.js, embedded. Its license:\n"
       <<
      [] {
        std::string l = detail::chartjs_license();
        for (std::size_t p = l.find("--"); p != std::string::npos; p = l.find("--", p))
          l.replace(p, 2, "- -");
        return l;
      }()
       << "-->\n<script>\n"
       << detail::chartjs_source() << "\n</script>\n</head>\n<body>\n"
       << "<h1>gridrun report: " << html(run_name) << "</h1>\n<p class=\"meta\">" << jobs.size() << " job(s)"
       << (status_line.empty() ? "" : " (" + html(status_line) + ")") << " &middot; " << html(opts.input)
       << " &middot; generated " << html(base::iso_now()) << " by gridrun " GRIDRUN_VERSION "</p>\n";
  if (!verdict.empty()) {
    page << "<section id=\"verdict\">\n<h2>Verdict</h2>\n";
    for (const auto& l : verdict) page << "<p>" << html(l) << "</p>\n";
    page << "</section>\n";
  }
  if (!unreadable.empty()) {
    page << "<p class=\"note\">Unreadable job files (tables only, no time series): ";
    for (std::size_t k = 0; k < unreadable.size(); ++k) page << (k ? ", " : "") << html(unreadable[k]);
    page << "</p>\n";
  }
  page << not_shown_html(charts);
  page << "<section id=\"charts\"></section>\n<section id=\"tables\">\n<h2 "
          "style=\"margin-top:24px\">Tables</h2>\n";
  for (const auto& t : tables) page << table_html(t);
  page << "</section>\n<footer>Charts drawn with Chart.js (MIT License), embedded in this file. "
          "FLOPs: multiply-add = 2, training = 3x forward; see docs/report.md.</footer>\n"
       << "<script type=\"application/json\" id=\"gridrun-data\">{\"charts\":[";
  for (std::size_t k = 0; k < charts.size(); ++k) page << (k ? ",\n" : "\n") << charts[k].json();
  page << "]}</script>\n<script>" << detail::report_js() << "</script>\n</body>\n</html>\n";

  base::write_file_atomic(opts.output, page.str());
  return result;
}

}  // namespace gridrun::report
