// `gridrun collect` and `gridrun report`: thin CLI edges over gridrun::report (the CPU roofs
// come from gridrun::hw's probe file). Each command's flags live in one options struct filled here from
// Boost.Program_options and validated right after parsing; bad flags throw std::invalid_argument
// (exit 2 in main.cpp).
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/bytes.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/hw/peak_probe.hpp"
#include "gridrun/report/collect.hpp"
#include "gridrun/report/compare.hpp"
#include "gridrun/report/reporter.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/run/run_summary.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

namespace {

struct CollectCli {
  std::string run_dir;
  bool quiet = false;
  bool help = false;
};

struct ReportCli {
  std::vector<std::string> inputs;  // one run: its report; two or more: the runs compared
  std::string format = "table";
  std::string group_by;
  std::vector<std::string> only;     // --only (and --filter, its older name)
  std::vector<std::string> filters;  // --filter: deprecated, the same selectors as --only
  int width = 0;                     // 0: the terminal's (table_width)
  bool all = false;                  // also the jobs of earlier grids of the run directory
  std::string html;                  // write the HTML report here instead of printing tables
  int profile_top = 0;               // > 0: print the top operators of each profiled job instead
  double peak_tflops = 0;            // 0: built-in GPU table and the CPU probe
  std::string probe;                 // probe.json for CPU roofs ("" = RUN_DIR/probe.json, else the cache)
  std::string sort;                  // --sort METRIC[:asc|desc] (report::parse_job_sort checks it)
  int top = 0;                       // --top N: the first N rows of the jobs table (with --sort)
  // --rows N: the jobs table's rows at most in the text, markdown and HTML reports (0: all).
  int rows = static_cast<int>(report::kReportJobRows);
  bool help = false;
};

// --format: a table format; the outputs that are not --format values have flags of their own, and
// the message says which (issue 58: `--format html` gave no hint of --html FILE).
void check_report_format(const ReportCli& o) {
  if (o.format == "html")
    throw std::invalid_argument("--format html: the HTML report is a file of its own: `gridrun report " +
                                base::shell_quote(o.inputs.front()) +
                                " --html report.html` (--format takes table, markdown, csv or json)");
  if (o.format == "profile")
    throw std::invalid_argument("--format profile: the operator tables are `gridrun report " +
                                base::shell_quote(o.inputs.front()) +
                                " --profile [N]` (--format takes table, markdown, csv or json)");
  if (!base::is_table_format(o.format))
    throw std::invalid_argument("--format " + o.format + ": expected table, markdown, csv or json");
}

bool vm_has(const Args& args, const std::string& flag) {
  for (const auto& a : args)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

// CPU roofs: --probe FILE (must be readable), else RUN_DIR/probe.json, else the user's cache.
// A missing default file is fine (the roofline then notes that CPU jobs have no roof).
void load_probe(const ReportCli& o, hw::RoofOptions& ro) {
  namespace fs = std::filesystem;
  if (!o.probe.empty()) {
    if (!fs::is_regular_file(o.probe)) throw std::invalid_argument("--probe " + o.probe + ": no such file");
    try {
      ro.probe = hw::read_probe(o.probe);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--probe: ") + e.what());
    }
    ro.probe_source = o.probe;
    return;
  }
  const fs::path in = o.inputs.front();
  const run::RunDir rd(fs::is_directory(in) ? in.string()
                                            : (in.parent_path().empty() ? "." : in.parent_path().string()));
  for (const fs::path& p : {fs::path(rd.probe_file()), fs::path(hw::default_probe_path())}) {
    if (!fs::is_regular_file(p)) continue;
    try {
      ro.probe = hw::read_probe(p.string());
      ro.probe_source = p.string();
      return;
    } catch (const std::exception& e) {
      std::cerr << "report: ignoring " << e.what() << "\n";
    }
  }
}

}  // namespace

int cmd_collect(const Args& args) {
  CollectCli o;
  po::options_description opts = command_options(o.help);
  opts.add_options()("quiet,q", po::bool_switch(&o.quiet),
                     "no summary line on stderr (skipped files still named)");
  const HelpText help{
      "gridrun collect RUN_DIR [options]",
      "Builds RUN_DIR/results.h5 from RUN_DIR/results/<id>.h5 (or .h5.partial): a /jobs table\n"
      "(id, status, parameters, summary figures) and an external link /links/<id> per job.\n"
      "Idempotent; unreadable or missing job files are named on stderr and skipped.",
      "\nExit codes: 0 ok (also when files were skipped), 1 runtime failure, 2 bad input.\n"};
  if (!parse_command(args, opts,
                     {{"run-dir", "RUN_DIR", "the run directory (`gridrun run/submit --out OUT`: OUT/NAME)",
                       1, po::value(&o.run_dir)}},
                     "collect", o.help, help, std::cout))
    return 0;
  if (o.run_dir.empty()) throw std::invalid_argument("missing RUN_DIR (see gridrun collect --help)");
  check_run_path(o.run_dir, "collect", false);
  report::CollectOptions co;
  co.run_dir = o.run_dir;
  co.quiet = o.quiet;
  report::collect(co, std::cerr);
  return 0;
}

namespace {
// --only, and --filter (its older name): the same selectors; a message names the flag as typed.
void set_filters(const ReportCli& o, report::ReportOptions& ro) {
  std::vector<jobs::Selector> only = parse_only(o.only);
  for (auto& f : parse_only(o.filters, "--filter")) only.push_back(std::move(f));
  ro.filters = only_filters(only);
  ro.filter_flag = o.filters.empty() ? "--only" : "--filter";
}
}  // namespace

namespace {

// RUN_DIR/.cache/report: the last table report of the run (run/run_summary.hpp rules), with the
// options and the gridrun build that made it.
constexpr const char* kReportCache = "report";
constexpr std::size_t kReportCacheMax = 4 << 20;  // a larger report (csv of every job) is not kept

// What makes two reports of the same files the same text: this build and every option that shapes
// the tables (the run directory's state is the cache's stamps).
std::string report_key(const report::ReportOptions& ro) {
  std::ostringstream k;
  k << "gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT ")\n"
    << base::absolute_path(ro.input) << "\n"
    << ro.format << "\n"
    << ro.group_by << "\n"
    << ro.width << " " << ro.all << " " << ro.top << " " << ro.max_job_rows << "\n"
    << ro.sort << "\n";
  for (const auto& [key, value] : ro.filters) k << key << "=" << value << "\n";
  return k.str();
}

// A table report of a run directory, from the run's report cache while no file of the run changed
// and the options are the same; else written afresh and cached unless a job was running. A settled
// run of 100,000 jobs: one small read instead of its index, state.json and the grid (issue 60);
// `gridrun run` with nothing to do ends with this report too.
// `stamps_before`: when the caller read the job files already (PreScan), the stamps it took then.
void cached_report(const report::ReportOptions& ro, report::Reporter& reporter,
                   const std::string* stamps_before = nullptr) {
  const run::RunDir rd(ro.input);
  const std::string key = report_key(ro);
  if (auto bytes = run::read_current_cache(rd, kReportCache)) {
    try {
      base::ByteReader r(*bytes);
      if (r.view() == key) {
        const std::string_view log = r.view(), out = r.view();
        std::cerr << log;
        std::cout << out;
        return;
      }
    } catch (const std::exception&) {
      // Damaged: written afresh below, and replaced.
    }
  }
  run::SummaryWriteOptions w;
  w.stamps_before = stamps_before ? *stamps_before : run::run_stamps(rd);
  std::ostringstream out_stream, log_stream;
  const report::ReportResult res = report::write_report(ro, reporter, out_stream, log_stream);
  const std::string out = out_stream.str(), log = log_stream.str();
  std::cerr << log;
  std::cout << out;
  w.live = res.live;
  if (out.size() + log.size() > kReportCacheMax) return;
  base::ByteWriter b;
  b.str(key);
  b.str(log);
  b.str(out);
  run::write_cache(rd, kReportCache, b.bytes(), w);
}

// The job files of a run read once for collect and the report (collect_and_report), and the
// stamps the report's cache is to be stored under.
struct PreScan {
  report::ScannedRun scan;
  std::string stamps_before;
};

// The reporter --profile and --html choose (else the table format), their flags checked and set.
std::string reporter_name(const Args& args, const ReportCli& o, report::ReportOptions& ro) {
  std::string output = o.format;
  if (vm_has(args, "--profile")) {
    if (o.profile_top < 1) throw std::invalid_argument("--profile: expected N >= 1");
    if (!o.html.empty()) throw std::invalid_argument("--profile and --html: choose one");
    if (!o.sort.empty())
      throw std::invalid_argument("--sort and --top order the jobs table; --profile prints operator tables");
    ro.profile_top = o.profile_top;
    output = "profile";
  } else if (o.html.empty()) {
    if (vm_has(args, "--peak-tflops") || vm_has(args, "--probe"))
      throw std::invalid_argument("--peak-tflops and --probe only apply with --html");
  } else {
    if (o.peak_tflops < 0 || !std::isfinite(o.peak_tflops))
      throw std::invalid_argument("--peak-tflops: expected a positive number of TFLOP/s");
    ro.output = o.html;
    if (o.peak_tflops > 0) ro.roofline.peak_tflops = o.peak_tflops;
    load_probe(o, ro.roofline);
    output = "html";
  }
  return output;
}

int report_command(const Args& args, PreScan* pre) {
  ReportCli o;
  po::options_description opts = command_options(o.help);
  add_table_flags(opts, o.format, o.width, "table | markdown | csv | json");
  opts.add_options()("group-by,g", po::value(&o.group_by),
                     "print the tables once per value of this parameter (one run)");
  add_only_flag(opts, o.only);
  opts.add_options()(
      "sort", po::value(&o.sort),
      "METRIC[:asc|desc]: the jobs table by a summary figure: a column of it (test_acc, samples/s, "
      "p50_ms, p95_ms, comm%, epochs, util%, peak_mem) or a /summary name as `export --what jobs` "
      "writes it (final_test_acc, wall_s, ...); largest first but for losses, times and costs "
      "(docs/report.md); jobs without it last")(
      "top", po::value(&o.top), "N: with --sort, only the first N jobs of the jobs table (the best N)")(
      "rows", po::value(&o.rows)->default_value(o.rows),
      "N: the jobs table shows at most N rows in the text, markdown and HTML reports: the first N in "
      "its order and every failed one after them, with a note of the rest (0: all; csv and json "
      "always have every row); the HTML report draws the time series of those first N jobs");
  opts.add_options()("filter", po::value(&o.filters)->composing(),
                     "deprecated: the older name of --only (still read, same meaning)")(
      "all", po::bool_switch(&o.all),
      "also report the jobs of earlier grids in the run directory (left out by default)")(
      "profile", po::value(&o.profile_top)->implicit_value(15),
      "[N] print the top N (default 15) operators of each profiled job instead of the tables (one run)")(
      "html", po::value(&o.html),
      "FILE: write a self-contained HTML report with charts (and the same tables) instead of printing "
      "(one run)")(
      "peak-tflops", po::value(&o.peak_tflops),
      "compute peak per GPU (GPU jobs) or per job (CPU jobs) for the roofline, in TFLOP/s; default: "
      "built-in GPU table (H100, H200, A100, V100) and `gridrun probe` for CPUs")(
      "probe", po::value(&o.probe),
      "probe.json for the CPU roofs (default RUN_DIR/probe.json, else ~/.cache/gridrun/probe.json)");
  const HelpText help{
      "gridrun report RUN_DIR [RUN_DIR ...] [options]",
      "One RUN_DIR: its report. A compare-by run's report opens with the verdict (which\n"
      "arrangement finished sooner, by how much). Then the per-job table and, where the jobs\n"
      "allow, scaling over ranks (weak/strong), GPU vs CPU, convergence and one-large vs\n"
      "several-small phase tables. Repeated seeds are averaged (± = 95% interval from 3\n"
      "seeds). A run directory is read from its job files (current state); a results.h5 from\n"
      "its /jobs table. Only the jobs of the run's current grid (RUN_DIR/grid.yaml) are reported\n"
      "unless --all. --sort METRIC [--top N]: the jobs table by a summary figure, the best N\n"
      "(e.g. --sort test_acc --top 5, --sort wall_s:asc).\n\n"
      "Two or more RUN_DIRs: the same configurations side by side (the same grid on two machines\n"
      "or with two builds): a row per job id in at least two runs (same parameters = same\n"
      "id), each run's samples/s, step p50, test accuracy and status, and the ratios of each\n"
      "run to the first (B/A). Runs are named A, B, ... in a Runs table with their folders.\n"
      "--only, --all, --format and --width apply; --group-by, --html and --profile do not.\n"
      "See docs/report.md, \"Comparing runs\".",
      "\nExit codes: 0 ok, 1 runtime failure, 2 bad input.\n"};
  if (!parse_command(optional_number(args, "--profile", "15"), opts,
                     {{"input", "RUN_DIR",
                       "a run directory (`gridrun run/submit --out OUT`: OUT/NAME) or its\n"
                       "results.h5; several are compared",
                       -1, po::value(&o.inputs)}},
                     "report", o.help, help, std::cout))
    return 0;
  if (o.inputs.empty())
    throw std::invalid_argument("missing RUN_DIR or results.h5 (see gridrun report --help)");
  check_report_format(o);
  // A grid file, another file, a folder of runs: the command meant (issue 58).
  for (const auto& in : o.inputs) check_run_path(in, "report", true);
  report::ReportOptions ro;
  ro.input = o.inputs.front();
  ro.format = o.format;
  ro.group_by = o.group_by;
  ro.width = table_width(o.width);
  ro.all = o.all;
  set_filters(o, ro);
  if (vm_has(args, "--top")) {
    if (o.top < 1) throw std::invalid_argument("--top " + std::to_string(o.top) + ": expected N >= 1");
    if (o.sort.empty())
      throw std::invalid_argument(
          "--top " + std::to_string(o.top) +
          ": needs --sort METRIC (the first N by which figure?), e.g. --sort test_acc");
    ro.top = static_cast<std::size_t>(o.top);
  }
  if (vm_has(args, "--sort") && o.sort.empty())
    throw std::invalid_argument("--sort: expected METRIC[:asc|desc], e.g. --sort test_acc");
  ro.sort = o.sort;
  if (o.rows < 0)
    throw std::invalid_argument("--rows " + std::to_string(o.rows) + ": expected N >= 0 (0: all)");
  // csv and json are read by programs: every row.
  if (o.format != "csv" && o.format != "json") ro.max_job_rows = static_cast<std::size_t>(o.rows);
  if (o.inputs.size() > 1) {
    // The comparison is one table of configurations; the single-run outputs do not line runs up.
    for (const char* flag :
         {"--html", "--profile", "--peak-tflops", "--probe", "--group-by", "-g", "--sort", "--top"})
      if (vm_has(args, flag))
        throw std::invalid_argument(std::string(flag) + " applies to the report of one run; comparing " +
                                    std::to_string(o.inputs.size()) +
                                    " runs prints tables (--format table|markdown|csv|json)");
    report::write_comparison(o.inputs, ro, std::cout, std::cerr);
    return 0;
  }
  const std::string output = reporter_name(args, o, ro);  // a table format, html or profile
  const std::unique_ptr<report::Reporter> reporter = report::make_reporter(output);
  if (pre) ro.scanned = &pre->scan;  // load_run takes it only when read as this reporter asks
  if (base::is_table_format(output) && std::filesystem::is_directory(ro.input))
    cached_report(ro, *reporter, pre ? &pre->stamps_before : nullptr);
  else
    report::write_report(ro, *reporter, std::cout, std::cerr);
  return 0;
}

}  // namespace

int cmd_report(const Args& args) { return report_command(args, nullptr); }

int collect_and_report(const std::string& run_dir, const Args& report_args) {
  const run::RunDir rd(run_dir);
  PreScan pre;
  const run::RunStampParts before = run::run_stamp_parts(rd);
  // As the table reports read (a reporter that asked otherwise would read the files again).
  const std::unique_ptr<report::Reporter> tables = report::make_reporter("table");
  results::FolderReadOptions fo;
  fo.depth = tables->depth();
  fo.whole_when_read = tables->whole_when_read();
  pre.scan = report::scan_results(run_dir, fo);
  report::CollectOptions co;
  co.run_dir = run_dir;
  co.quiet = true;
  co.scanned = &pre.scan;
  report::collect(co, std::cerr);
  // results.h5 is what collect just wrote from this read: a cached report of the same read stays
  // current under the stamps after it. Anything else changed meanwhile: the report is not cached.
  const run::RunStampParts after = run::run_stamp_parts(rd);
  pre.stamps_before = run::same_but_index(before, after) ? after.text() : before.text();
  return report_command(report_args, &pre);
}

}  // namespace gridrun::app
