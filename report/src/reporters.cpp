// The reporters (reporter.hpp): the analysis tables in four formats, the HTML page and the
// per-job operator tables of `gridrun report --profile`, and write_report, the one path from a
// run to any of them.
#include <algorithm>
#include <stdexcept>

#include "gridrun/base/text.hpp"
#include "gridrun/report/reporter.hpp"
#include "html_report.hpp"

namespace gridrun::report {

// Reports render results' records and job files; their vocabulary is used unqualified here.
using namespace gridrun::results;  // NOLINT(google-build-using-namespace)

using base::number_cell;
using base::Table;
using base::text_cell;
using results::Depth;
using results::JobData;
using results::OpProfile;

namespace {

// table | markdown | csv | json: the analysis tables (tables.hpp) from the job records.
class TablesReporter : public Reporter {
 public:
  explicit TablesReporter(std::string format) : format_(std::move(format)) {}
  std::string name() const override { return format_; }
  Depth depth() const override { return Depth::Summary; }
  void report(LoadedRun run, const ReportOptions& opts, std::ostream& out, std::ostream&) override {
    ReportOptions o = opts;
    o.format = format_;
    render(run_tables(run, o), o, out);
  }

 private:
  std::string format_;
};

// html: one self-contained page (html_report.hpp), written to opts.output.
class HtmlReporter : public Reporter {
 public:
  std::string name() const override { return "html"; }
  // The summaries of every job; the few whose series it draws are read whole (write_html_report).
  Depth depth() const override { return Depth::Summary; }
  bool whole_when_read() const override { return true; }
  void check(const ReportOptions& opts) const override { check_html_output(opts.output); }
  void report(LoadedRun run, const ReportOptions& opts, std::ostream&, std::ostream& log) override {
    const HtmlReportResult r = write_html_report(std::move(run), opts);
    log << "report: wrote " << opts.output << " (" << r.jobs << " jobs, " << r.charts << " charts, "
        << r.notes << " notes for charts without data)\n";
  }
};

// profile: the top operators of every profiled job (by self device time for GPU profiles, else
// self CPU time), one table per job, like the published operator tables; read from the job files
// (the run index holds no operator tables) and rendered in opts.format.
class ProfileReporter : public Reporter {
 public:
  std::string name() const override { return "profile"; }
  Depth depth() const override { return Depth::Full; }
  void report(LoadedRun run, const ReportOptions& opts, std::ostream& out, std::ostream& log) override;
};

void ProfileReporter::report(LoadedRun run, const ReportOptions& opts, std::ostream& out, std::ostream&) {
  const int top = opts.profile_top;
  std::vector<Table> tables;
  std::size_t unprofiled = 0;
  const auto loaded = run.data_by_id();
  for (const auto& rec : select_jobs(run.jobs, opts)) {
    const auto it = loaded.find(rec.id);
    if (it == loaded.end()) continue;  // unreadable: load_run named it
    const JobData& job = *it->second;
    if (job.profile.empty()) {
      ++unprofiled;
      continue;
    }
    std::vector<OpProfile> ops = job.profile;
    const bool device =
        std::any_of(ops.begin(), ops.end(), [](const OpProfile& o) { return o.self_device_us > 0; });
    std::stable_sort(ops.begin(), ops.end(), [&](const OpProfile& a, const OpProfile& b) {
      return device ? a.self_device_us > b.self_device_us : a.self_cpu_us > b.self_cpu_us;
    });
    double self_total = 0;
    for (const auto& o : ops) self_total += device ? o.self_device_us : o.self_cpu_us;
    if (static_cast<int>(ops.size()) > top) ops.resize(static_cast<std::size_t>(top));
    Table t;
    std::string what;
    for (const char* k : {"model", "device", "ranks", "nodes", "batch_per_rank"}) {
      auto v = param_value(rec.params, k);
      if (v && std::string(k) == "nodes" && to_string(*v) == "1") continue;  // the usual case
      if (v) what += std::string(what.empty() ? "" : " ") + k + "=" + to_string(*v);
    }
    t.title = "Operators: " + rec.id + (what.empty() ? "" : " (" + what + ")");
    t.columns = {"operator", "calls", "self_cpu_ms", "cpu_total_ms", "self_dev_ms", "dev_total_ms", "self%"};
    for (const auto& o : ops) {
      const double self = device ? o.self_device_us : o.self_cpu_us;
      t.rows.push_back({text_cell(o.name), number_cell(static_cast<double>(o.calls), 0),
                        number_cell(o.self_cpu_us / 1e3, 2), number_cell(o.total_cpu_us / 1e3, 2),
                        number_cell(o.self_device_us / 1e3, 2), number_cell(o.total_device_us / 1e3, 2),
                        number_cell(self_total > 0 ? 100 * self / self_total : 0.0, 1)});
    }
    t.notes.push_back(std::string("sorted by self ") + (device ? "device" : "CPU") +
                      " time, summed over the profiled steps; self% = share of all operators' self time.");
    tables.push_back(t);
  }
  if (tables.empty()) {
    Table t;
    t.title = "Operators";
    t.columns = {"operator"};
    t.notes.push_back("no job recorded an operator profile (/profile): set profile_steps in the grid");
    tables.push_back(t);
  } else if (unprofiled) {
    tables.back().notes.push_back(std::to_string(unprofiled) + " job(s) without /profile not shown.");
  }
  render(tables, opts, out);
}

}  // namespace

const std::vector<std::string>& reporter_names() {
  static const std::vector<std::string> names = {"table", "markdown", "csv", "json", "html", "profile"};
  return names;
}

std::unique_ptr<Reporter> make_reporter(const std::string& name) {
  if (base::is_table_format(name)) return std::make_unique<TablesReporter>(name);
  if (name == "html") return std::make_unique<HtmlReporter>();
  if (name == "profile") return std::make_unique<ProfileReporter>();
  std::string known;
  for (const auto& n : reporter_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("report format " + name + ": expected one of " + known);
}

ReportResult write_report(const ReportOptions& opts, Reporter& reporter, std::ostream& out,
                          std::ostream& log) {
  reporter.check(opts);  // bad options fail before anything is read
  LoadOptions lo;
  lo.depth = reporter.depth();
  lo.whole_when_read = reporter.whole_when_read();
  lo.all = opts.all;
  lo.scanned = opts.scanned;
  LoadedRun run = load_run(opts.input, log, lo);
  ReportResult r;
  r.live = std::any_of(run.jobs.begin(), run.jobs.end(),
                       [](const results::JobRecord& j) { return j.status == to_string(Status::Running); });
  reporter.report(std::move(run), opts, out, log);
  return r;
}

}  // namespace gridrun::report
