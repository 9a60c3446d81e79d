// `gridrun ls [DIR]`: the runs under a folder, one row each: its path, its grid, how many jobs are
// done, failed, running and pending, when it last changed and the verdict line of its report.
//
// Why built from the existing readers and not a reader of its own: a run directory is what
// run::RunDir::holds_run recognises (as `gridrun status`), the counts are `gridrun status`'s
// (settled_status: state.json, job files, results files, Slurm's view), the verdict is
// `gridrun report`'s first verdict line (report::load_run, report::verdict_lines). So `ls` never
// says something about a run that `status` or `report` would contradict.
//
// It writes nothing into the runs it lists but each run's summary cache (.cache/summary.json,
// run/run_summary.hpp: the row, reused while the run's stamps hold, so that a run of 100,000 jobs
// lists in milliseconds) and the status cache it shares with `gridrun status` (.cache/status: a
// `status` after `ls`, or `ls` after `status`, reads the run once). The readers it calls do not quarantine or
// repair (that is `gridrun run`'s), and the results folders' index cache is not written while
// results::IndexWritesOff is held. One damaged run never stops the listing: its row names the problem and the
// command still exits 0.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/report/run_model.hpp"
#include "gridrun/report/verdict.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/run/run_summary.hpp"
#include "gridrun/slurm/submit.hpp"
#include "gridrun/status/status.hpp"
#include "settled_status.hpp"

namespace gridrun::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

inline constexpr int kMaxDepth = 20;

struct LsCli {
  std::string dir = ".";
  std::string format = "table";
  int width = 0;  // 0: the terminal's (table_width)
  int depth = 1;  // DIR itself (0) and its children (1), ...
  bool help = false;
};

// One listed run. Counts are -1 when its status could not be read.
struct RunRow {
  std::string path;       // as found under DIR ("runs/quickstart")
  std::string name;       // the grid's name (state.json, else the folder's name)
  std::string grid_file;  // the run's copy of its grid (RUN_DIR/grid.yaml), "" when none
  long jobs = -1, done = -1, failed = -1, running = -1, pending = -1;
  std::map<std::string, long> counts;  // by outcome ("completed", "target_reached", ...)
  double changed_unix = std::nan("");  // newest modification of the run's files
  // The report's answer in a few words (report::VerdictHeadline: winner, ratio, interval, marks),
  // what the table shows first; "" when no two phases were measured.
  std::string answer;
  std::string verdict;                // the report's whole verdict, its lines joined; "" when it has none
  std::vector<std::string> problems;  // what could not be read, one line each
  std::string resume;                 // interrupted, nobody runs it: the command that resumes it
};

// The run directories under `dir`: `dir` itself when it holds a run, else its subfolders down to
// `depth` levels (a run's own subfolders are not searched: jobs/, results/ hold no runs). Hidden
// folders are skipped; sorted by path.
void find_runs(const fs::path& dir, int depth, std::vector<std::string>& out) {
  if (run::RunDir(dir.string()).holds_run()) {
    out.push_back(dir.lexically_normal().string());
    return;
  }
  if (depth <= 0) return;
  std::error_code ec;
  std::vector<fs::path> subs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code tec;
    if (!name.empty() && name[0] != '.' && it->is_directory(tec)) subs.push_back(it->path());
  }
  if (ec) std::cerr << "ls: " << dir.string() << ": " << ec.message() << " (skipped)\n";
  std::sort(subs.begin(), subs.end());
  for (const auto& s : subs) find_runs(s, depth - 1, out);
}

// The newest modification time of the run's own files: those in its folder (state.json, grid.yaml,
// results.h5, ...) and in results/ and logs/ (a running job's file and log grow), hidden files
// (the results index, a cache) left out. NaN when none could be read.
double last_change(const run::RunDir& rd) {
  double newest = std::nan("");
  for (const std::string& folder : {rd.root(), rd.results_dir(), rd.logs_dir()}) {
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().filename().string().rfind('.', 0) == 0) continue;
      std::error_code tec;
      if (!it->is_regular_file(tec)) continue;
      const auto t = it->last_write_time(tec);
      if (tec) continue;
      const auto sys = std::chrono::time_point_cast<std::chrono::milliseconds>(
          t - fs::file_time_type::clock::now() + std::chrono::system_clock::now());
      const double s = std::chrono::duration<double>(sys.time_since_epoch()).count();
      if (std::isnan(newest) || s > newest) newest = s;
    }
  }
  return newest;
}

// A row as the run's summary cache keeps it (run/run_summary.hpp), and back.
base::Json row_payload(const RunRow& r) {
  base::Json counts = base::Json::object();
  for (const auto& [k, n] : r.counts) counts[k] = n;
  return base::Json{
      {"name", r.name},       {"grid_file", r.grid_file}, {"jobs", r.jobs},
      {"done", r.done},       {"failed", r.failed},       {"running", r.running},
      {"pending", r.pending}, {"counts", counts},         {"changed_unix", base::json_number(r.changed_unix)},
      {"answer", r.answer},   {"verdict", r.verdict},     {"problems", r.problems},
      {"resume", r.resume}};
}

RunRow row_of_payload(const std::string& path, const base::Json& j) {
  RunRow r;
  r.path = path;
  r.name = base::get_string(j, "name");
  r.grid_file = base::get_string(j, "grid_file");
  r.jobs = base::get_int(j, "jobs", -1);
  r.done = base::get_int(j, "done", -1);
  r.failed = base::get_int(j, "failed", -1);
  r.running = base::get_int(j, "running", -1);
  r.pending = base::get_int(j, "pending", -1);
  if (j.contains("counts") && j["counts"].is_object())
    for (const auto& [k, v] : j["counts"].items())
      if (v.is_number_integer()) r.counts[k] = v.get<long>();
  const base::Json& changed = j.contains("changed_unix") ? j["changed_unix"] : base::Json();
  r.changed_unix = changed.is_number() ? changed.get<double>() : std::nan("");
  r.answer = base::get_string(j, "answer");
  r.verdict = base::get_string(j, "verdict");
  if (j.contains("problems") && j["problems"].is_array())
    for (const auto& p : j["problems"])
      if (p.is_string()) r.problems.push_back(p.get<std::string>());
  r.resume = base::get_string(j, "resume");
  return r;
}

RunRow compute_row(const std::string& path, bool& live) {
  RunRow row;
  row.path = path;
  row.name = fs::path(path).filename().string();
  const run::RunDir rd(path);
  std::error_code ec;
  if (fs::is_regular_file(rd.grid_copy(), ec)) row.grid_file = rd.grid_copy();
  row.changed_unix = last_change(rd);
  try {
    // As `gridrun status` reads it: a damaged state.json is listed in `damaged`, never thrown.
    // Through the run's status cache, shared with `gridrun status` (settled_status.hpp).
    slurm::SlurmCli cli;
    const status::RunStatus st = settled_status(path, cli);
    row.name = st.name;
    row.jobs = static_cast<long>(st.jobs.size());
    row.done = row.failed = row.running = row.pending = 0;
    for (const auto& [outcome, n] : st.counts) {
      row.counts[run::to_string(outcome)] = static_cast<long>(n);
      if (run::is_finished(outcome))
        row.done += static_cast<long>(n);
      else if (run::is_failure(outcome))
        row.failed += static_cast<long>(n);
      else if (outcome == run::JobOutcome::Running)
        row.running += static_cast<long>(n);
      else  // pending, submitted (queued by Slurm), interrupted: still to run
        row.pending += static_cast<long>(n);
    }
    for (const auto& [outcome, n] : st.counts)
      if (n > 0 && (outcome == run::JobOutcome::Running || run::is_queued(outcome))) live = true;
    for (const auto& d : st.damaged) row.problems.push_back("damaged: " + d);
    for (const auto& w : st.warnings) row.problems.push_back("warning: " + base::printable_line(w));
    row.resume = st.resume_command;
  } catch (const std::exception& e) {
    row.problems.push_back("status: " + base::printable_line(e.what()));
    live = true;  // not known: never cached
  }
  // The verdict is the report's, read as `gridrun report` reads the run. What the report would say
  // it skipped (an unreadable job file, a grid copy that no longer loads) is the row's problem; a
  // job without a results file yet is not one (it is pending).
  std::error_code rec;
  if (fs::is_directory(rd.results_dir(), rec)) {
    try {
      std::ostringstream log;
      const report::LoadedRun lr = report::load_run(path, log);
      const report::Verdict v =
          report::verdict_of(lr.phases, report::VerdictOptions{lr.compare_by, lr.rerun_prefix});
      if (v.headline) row.answer = base::printable_line(v.headline->text());
      row.verdict = base::printable_line(base::join(v.lines, " "));
      std::istringstream said(log.str());
      std::vector<std::string> skipped;
      for (std::string line; std::getline(said, line);)
        if (!line.empty() && line.find(": missing (job has no results file)") == std::string::npos)
          skipped.push_back(base::printable_line(line));
      if (skipped.size() > 3) {
        const std::size_t n = skipped.size();
        skipped.resize(2);
        skipped.push_back("... " + std::to_string(n - 2) + " more (gridrun report names them)");
      }
      row.problems.insert(row.problems.end(), skipped.begin(), skipped.end());
    } catch (const std::exception& e) {
      row.problems.push_back("report: " + base::printable_line(e.what()));
      live = true;  // perhaps passing (a read that timed out): never cached
    }
  }
  return row;
}

// A run's row: from its summary cache when nothing changed since it was computed, else computed
// (status and the report's verdict) and cached for the next listing.
RunRow read_run(const std::string& path) {
  const run::RunDir rd(path);
  if (auto cached = run::read_current_summary(rd)) return row_of_payload(path, *cached);
  run::SummaryWriteOptions w;
  w.stamps_before = run::run_stamps(rd);
  RunRow row = compute_row(path, w.live);
  run::write_summary(rd, row_payload(row), w);
  return row;
}

// "3m05s ago" (base::format_duration); "-" when not known.
std::string age_text(double changed_unix, double now) {
  if (std::isnan(changed_unix)) return "-";
  return base::format_duration(std::max(0.0, now - changed_unix)) + " ago";
}

base::Json count_json(long n) { return n < 0 ? base::Json(nullptr) : base::Json(n); }

base::Json row_json(const RunRow& r, double now) {
  base::Json counts = base::Json::object();
  for (const auto& [k, n] : r.counts) counts[k] = n;
  const bool known = !std::isnan(r.changed_unix);
  return base::Json{
      {"path", r.path},
      {"name", r.name},
      {"grid_file", r.grid_file.empty() ? base::Json(nullptr) : base::Json(r.grid_file)},
      {"jobs", count_json(r.jobs)},
      {"done", count_json(r.done)},
      {"failed", count_json(r.failed)},
      {"running", count_json(r.running)},
      {"pending", count_json(r.pending)},
      {"counts", counts},
      {"last_change",
       known ? base::Json(base::iso_time(static_cast<std::time_t>(r.changed_unix))) : base::Json(nullptr)},
      {"age_s", known ? base::json_number(std::max(0.0, now - r.changed_unix)) : base::Json(nullptr)},
      {"answer", r.answer.empty() ? base::Json(nullptr) : base::Json(r.answer)},
      {"verdict", r.verdict.empty() ? base::Json(nullptr) : base::Json(r.verdict)},
      {"interrupted", !r.resume.empty()},
      {"resume_command", r.resume.empty() ? base::Json(nullptr) : base::Json(r.resume)},
      {"problem", r.problems.empty() ? base::Json(nullptr) : base::Json(base::join(r.problems, "; "))}};
}

// csv: the json's flat keys (the per-outcome counts are json's only), an empty field for unknown.
void write_csv(const std::vector<RunRow>& rows, double now, std::ostream& os) {
  const std::vector<std::string> keys = {"path",   "name",    "grid_file",   "jobs",        "done",
                                         "failed", "running", "pending",     "last_change", "age_s",
                                         "answer", "verdict", "interrupted", "problem",     "resume_command"};
  os << base::join(keys, ",") << "\n";
  for (const auto& r : rows) {
    const base::Json j = row_json(r, now);
    std::string line;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const base::Json& v = j.at(keys[k]);
      if (k) line += ",";
      if (v.is_string())
        line += base::csv_quote(v.get<std::string>());
      else if (!v.is_null())
        line += base::dump_line(v);
    }
    os << line << "\n";
  }
}

// table: one line per run, fitted to the width as `gridrun status` is (the note column, the
// verdict or the problem, is cut with "…"; the grid's name is left out first).
void write_table(const std::vector<RunRow>& rows, double now, int width, const std::string& dir, int depth,
                 std::ostream& os) {
  if (rows.empty()) {
    os << "no run directories in " << dir
       << (depth > 0 ? " or below (--depth " + std::to_string(depth) + ")" : "") << "\n";
    return;
  }
  auto count = [](long n) { return base::number_cell(n < 0 ? std::nan("") : static_cast<double>(n), 0); };
  base::Table t;
  t.columns = {"run", "grid", "jobs", "done", "failed", "running", "pending", "changed", "verdict"};
  for (const auto& r : rows) {
    // An interrupted run says so first, with its command: nothing else will resume it.
    // The answer first (winner, ratio, interval, marks); a run without one shows its verdict's
    // first words ("No verdict for ranks=2: ...").
    const std::string said = !r.answer.empty() ? r.answer : r.verdict;
    std::string note =
        r.problems.empty() ? (said.empty() ? "-" : said) : "problem: " + base::join(r.problems, "; ");
    if (!r.resume.empty()) note = "interrupted: resume with " + r.resume + (note == "-" ? "" : "; " + note);
    t.rows.push_back({base::text_cell(r.path), base::text_cell(r.name), count(r.jobs), count(r.done),
                      count(r.failed), count(r.running), count(r.pending),
                      base::text_cell(age_text(r.changed_unix, now)), base::text_cell(note)});
  }
  t.drop_order = {1, 7, 2};
  t.shrink_column = 8;
  base::TableStyle style;
  style.width = width;
  style.fit = base::TableStyle::Fit::Drop;
  style.heading = false;
  base::render_tables({t}, style, os);
}

}  // namespace

int cmd_ls(const Args& args) {
  LsCli o;
  po::options_description opts = command_options(o.help);
  add_table_flags(opts, o.format, o.width, "table | csv | json");
  opts.add_options()("depth", po::value(&o.depth)->default_value(1),
                     "N: look for runs down to N folder levels below DIR (0: DIR itself only; 0-20)");
  const HelpText help{
      "gridrun ls [DIR] [options]",
      "Lists the run directories in DIR (default: the current folder): DIR itself when it is a\n"
      "run, else its subfolders (`gridrun run --out DIR` puts each grid's run in DIR/<name>).\n"
      "One row per run: its path, its grid's name, how many jobs are done (completed or target\n"
      "reached), failed (or diverged), running and pending (also queued or interrupted), as\n"
      "`gridrun status` counts them; when the run last changed; and the answer of the verdict\n"
      "`gridrun report` prints (a run with `compare: {by: ...}`): the faster phase, its ratio and\n"
      "interval, then marks: inconclusive, disturbed (other work on its CPU, GPUs or nodes),\n"
      "slowed (over 15 % slower than calibrated), start-up (launch is most of the time). A run\n"
      "without one shows its verdict's first sentence. A run that cannot be read fully\n"
      "still gets its row, with the problem in place of the verdict. Writes nothing into the\n"
      "runs but each one's row, RUN_DIR/.cache/summary.json, and the status `gridrun status`\n"
      "also reads, RUN_DIR/.cache/status, each reused until a file of the run changes (a run\n"
      "with jobs running or queued is read afresh each time). A run cut short\n"
      "(its lock free, jobs left running or interrupted) is\n"
      "\"interrupted\", with the command that resumes it; jobs that state.json calls finished but\n"
      "that have no results file are pending, with a warning. csv and json: path, name,\n"
      "grid_file, jobs, done, failed, running, pending, last_change (ISO 8601 UTC), age_s,\n"
      "answer, verdict (the whole verdict), interrupted, problem, resume_command (empty/null\n"
      "when unknown); json also the count of every outcome.",
      "\nExit codes: 0 ok (also when some runs have problems), 1 runtime failure, 2 bad input\n"
      "(flags, DIR not a folder).\n"};
  if (!parse_command(
          args, opts,
          {{"dir", "DIR", "the folder to look in (default .), e.g. the runs folder of `gridrun run`", 1,
            po::value(&o.dir)}},
          "ls", o.help, help, std::cout))
    return 0;
  if (o.format != "table" && o.format != "csv" && o.format != "json")
    throw std::invalid_argument("--format " + o.format + ": expected table, csv or json");
  if (o.depth < 0 || o.depth > kMaxDepth)
    throw std::invalid_argument("--depth " + std::to_string(o.depth) + ": expected 0-" +
                                std::to_string(kMaxDepth));
  const int width = table_width(o.width);
  std::error_code ec;
  if (!fs::is_directory(o.dir, ec)) throw std::invalid_argument("DIR: '" + o.dir + "' is not a folder");

  const results::IndexWritesOff read_only;
  std::vector<std::string> paths;
  find_runs(o.dir, o.depth, paths);
  std::vector<RunRow> rows;
  for (const auto& p : paths) rows.push_back(read_run(p));
  const double now = base::unix_now();
  if (o.format == "json") {
    base::Json all = base::Json::array();
    for (const auto& r : rows) all.push_back(row_json(r, now));
    std::cout << all.dump(1) << "\n";
  } else if (o.format == "csv") {
    write_csv(rows, now, std::cout);
  } else {
    write_table(rows, now, width, o.dir, o.depth, std::cout);
  }
  return 0;
}

}  // namespace gridrun::app
