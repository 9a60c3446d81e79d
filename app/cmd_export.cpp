// `gridrun export RUN_DIR --what steps|epochs|jobs|phases`: one tidy table of a run's numbers per
// call, as CSV or JSON, for pandas, R or a spreadsheet.
//
// Why a command of its own: `report --format csv` is several tables with `# Section` lines and
// display headers ("util%"), made for people who read them; a program wants one table per file,
// one header line, snake_case names and one row per observation (step, epoch, job or phase), with
// the parameters that tell the jobs apart as columns (the ones `gridrun plan` shows), so that
// `pandas.read_csv(...)` then `groupby("lr")` works as is. docs/results.md, "Export".
//
// The run is read through report::load_run (every job file once, through the results folder's
// index), at the whole-table depth only for steps and epochs. Rows are written as they are made,
// so a run of many long jobs is never held as cells.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/report/run_model.hpp"
#include "gridrun/report/tables.hpp"
#include "gridrun/report/tensorboard.hpp"
#include "gridrun/results/reader.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

namespace {

using base::Json;

struct ExportCli {
  std::string input;              // positional RUN_DIR (or its results.h5)
  std::string what;               // steps | epochs | jobs | phases
  std::string format = "csv";     // csv | json
  std::string output;             // --out FILE; "" or "-": stdout
  bool all = false;               // also the jobs of earlier grids of the run directory
  std::vector<std::string> only;  // --only selectors (cli.hpp: the same as status and report)
  bool help = false;
};

void add_export_options(po::options_description& d, ExportCli& o) {
  d.add_options()(
      "what", po::value(&o.what),
      "the table (required but with --format tensorboard): steps (a row per training step of each "
      "job, /steps), epochs (a row per epoch, /epochs), jobs (a row per job: status, exit_reason and "
      "the /summary figures) or phases (a row per compare-by phase: the report's phase figures)")(
      "format,f", po::value(&o.format)->default_value("csv"),
      "csv (one header line, then the rows), json (an array of objects with the same keys) or "
      "tensorboard (a TensorBoard log folder: --out DIR, no --what; one TensorBoard run per job with "
      "its steps, epochs, utilization and summary as scalars and its parameters as hparams)")(
      "out,o", po::value(&o.output),
      "FILE: write the table there (atomically); none or -: stdout; --format tensorboard: the folder DIR")(
      "all", po::bool_switch(&o.all),
      "also the jobs of earlier grids in the run directory (left out by default)");
  add_only_flag(d, o.only);
}

// Right after parsing: every value is checked before the run is read (exit 2 naming the flag).
void check_export_options(const ExportCli& o) {
  if (o.input.empty()) throw std::invalid_argument("missing RUN_DIR (see gridrun export --help)");
  check_run_path(o.input, "export", true);  // a grid file, a folder of runs: the command meant
  if (o.format == "tensorboard") {
    if (!o.what.empty())
      throw std::invalid_argument("--what " + o.what +
                                  ": not used with --format tensorboard (each job's steps, epochs, "
                                  "utilization and summary are written)");
    if (o.output.empty() || o.output == "-")
      throw std::invalid_argument("--out: required with --format tensorboard (the folder to write into)");
    std::filesystem::path dir = o.output;
    if (!dir.has_filename()) dir = dir.parent_path();  // "tb/"
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
      throw std::invalid_argument("--out " + o.output + ": not a folder");
    if (dir.has_parent_path() && !std::filesystem::is_directory(dir.parent_path(), ec))
      throw std::invalid_argument("--out " + o.output + ": no such folder " + dir.parent_path().string());
    return;
  }
  if (o.what.empty())
    throw std::invalid_argument(
        "--what: required, one of steps, epochs, jobs, phases (see gridrun export --help)");
  if (o.what != "steps" && o.what != "epochs" && o.what != "jobs" && o.what != "phases")
    throw std::invalid_argument("--what " + o.what + ": expected steps, epochs, jobs or phases");
  if (o.format != "csv" && o.format != "json")
    throw std::invalid_argument("--format " + o.format + ": expected csv, json or tensorboard");
  // A phase's figures come from all of its jobs: a part of them is no phase measurement.
  if (!o.only.empty() && o.what == "phases")
    throw std::invalid_argument(
        "--only selects jobs; --what phases has a row per phase, each made of "
        "all its jobs (use --what jobs, epochs or steps)");
  const std::filesystem::path out = o.output;
  std::error_code ec;
  if (o.output != "-" && out.has_parent_path() && !std::filesystem::is_directory(out.parent_path(), ec))
    throw std::invalid_argument("--out " + o.output + ": no such folder " + out.parent_path().string());
}

// A column name as programs want it: lower case letters, digits and '_' ("util%" would not do).
std::string snake_case(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c >= 'A' && c <= 'Z')
      out += static_cast<char>(c - 'A' + 'a');
    else
      out += keep ? c : '_';
  }
  return out;
}

// Writes one table as it is made: columns first, then each row's values in column order (null for
// a value a row does not have). CSV: an empty field for null, numbers as JSON spells them
// (shortest exact text, whole numbers without ".0"); JSON: an array of objects, one a line.
class TidyWriter {
 public:
  TidyWriter(std::ostream& out, bool json) : out_(out), json_(json) {}

  void columns(std::vector<std::string> names) {
    names_ = std::move(names);
    if (json_) {
      out_ << "[";
      return;
    }
    for (std::size_t k = 0; k < names_.size(); ++k) out_ << (k ? "," : "") << base::csv_quote(names_[k]);
    out_ << "\n";
  }

  void row(const std::vector<Json>& values) {
    if (json_) {
      Json obj = Json::object();
      for (std::size_t k = 0; k < names_.size(); ++k) base::append_new_member(obj, names_[k], values[k]);
      out_ << (rows_ ? ",\n " : "\n ") << base::dump_line(obj);
    } else {
      for (std::size_t k = 0; k < names_.size(); ++k) {
        const Json& v = values[k];
        if (k) out_ << ",";
        if (v.is_string())
          out_ << base::csv_quote(v.get<std::string>());
        else if (!v.is_null())
          out_ << base::dump_line(v);
      }
      out_ << "\n";
    }
    ++rows_;
  }

  void end() {
    if (json_) out_ << (rows_ ? "\n]\n" : "]\n");
  }

 private:
  std::ostream& out_;
  bool json_;
  std::vector<std::string> names_;
  std::size_t rows_ = 0;
};

Json number(double v) { return base::json_number(v); }

// A parameter's value as its type has it (numbers stay numbers in JSON); null when the job has none.
Json param_json(const results::RecordedParams& p, const std::string& name) {
  const auto v = results::param_value(p, name);
  if (!v) return nullptr;
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>)
          return base::json_number(x);
        else
          return Json(x);
      },
      *v);
}

// The leading columns of every per-job table: the job id and the parameters that differ between
// the run's jobs (results::varying_params, what `plan` and the report show). A parameter whose
// name a measured column of the table also has is named `param_<name>`.
struct JobKeys {
  std::vector<std::string> params;   // parameter names
  std::vector<std::string> columns;  // "job_id", then their column names
};

JobKeys job_keys(const report::LoadedRun& run, const std::set<std::string>& measured) {
  std::vector<const results::RecordedParams*> ps;
  for (const auto& j : run.jobs) ps.push_back(&j.params);
  JobKeys k;
  k.params = results::varying_params(ps);
  k.columns.push_back("job_id");
  for (const auto& p : k.params) {
    const std::string name = snake_case(p);
    k.columns.push_back(measured.count(name) || name == "job_id" ? "param_" + name : name);
  }
  return k;
}

// A table's header: the job keys (job_id and the parameters that vary), then the measured columns;
// returns the keys each row starts with.
JobKeys start_table(const report::LoadedRun& run, const std::vector<std::string>& measured, TidyWriter& w) {
  JobKeys keys = job_keys(run, {measured.begin(), measured.end()});
  std::vector<std::string> columns = keys.columns;
  columns.insert(columns.end(), measured.begin(), measured.end());
  w.columns(columns);
  return keys;
}

void key_values(const JobKeys& k, const results::JobRecord& job, std::vector<Json>& row) {
  row.emplace_back(job.id);
  for (const auto& p : k.params) row.push_back(param_json(job.params, p));
}

// steps and epochs: a row per table row of each job's file. Columns: `first` (the row's own
// index: step and epoch, or epoch) in that order, the other scalar columns of any job's table
// alphabetically, then each per-rank matrix (rank_step_s) as <name>_<rank>, as many as the job
// with the most ranks has (empty for the others). A job whose file could not be read has no rows
// (load_run named it on stderr).
void write_table_rows(const report::LoadedRun& run, results::TableData results::JobData::*table,
                      const std::vector<std::string>& first, TidyWriter& w) {
  std::set<std::string> scalars;
  std::map<std::string, std::size_t> matrices;  // name -> widest
  const auto by_id = run.data_by_id();
  for (const auto& d : run.data) {
    for (const auto& [name, col] : (d.*table).columns) scalars.insert(name);
    for (const auto& [name, m] : (d.*table).matrices) matrices[name] = std::max(matrices[name], m.cols);
  }
  std::vector<std::string> order;
  for (const auto& f : first)
    if (scalars.count(f)) order.push_back(f);
  for (const auto& s : scalars)
    if (std::find(first.begin(), first.end(), s) == first.end()) order.push_back(s);
  std::vector<std::string> measured;
  for (const auto& s : order) measured.push_back(snake_case(s));
  for (const auto& [name, width] : matrices)
    for (std::size_t c = 0; c < width; ++c) measured.push_back(snake_case(name) + "_" + std::to_string(c));
  const JobKeys keys = start_table(run, measured, w);
  std::vector<Json> row;
  for (const auto& job : run.jobs) {
    const auto it = by_id.find(job.id);
    if (it == by_id.end()) continue;
    const results::TableData& t = it->second->*table;
    std::vector<const std::vector<double>*> cols;
    for (const auto& s : order) cols.push_back(t.column(s));
    for (std::size_t r = 0; r < t.rows; ++r) {
      row.clear();
      key_values(keys, job, row);
      for (const auto* c : cols) row.push_back(c && r < c->size() ? number((*c)[r]) : Json(nullptr));
      for (const auto& [name, width] : matrices) {
        const auto m = t.matrices.find(name);
        for (std::size_t c = 0; c < width; ++c) {
          const bool has = m != t.matrices.end() && r < m->second.rows && c < m->second.cols;
          row.push_back(has ? number(m->second.at(r, c)) : Json(nullptr));
        }
      }
      w.row(row);
    }
  }
  w.end();
}

// jobs: a row per job record: status, exit_reason, then every /summary figure any job has
// (alphabetically; empty where a job lacks it, e.g. a job that failed before training).
void write_jobs(const report::LoadedRun& run, TidyWriter& w) {
  std::set<std::string> figures;
  for (const auto& j : run.jobs)
    for (const auto& [name, v] : j.summary) figures.insert(name);
  std::vector<std::string> measured = {"status", "exit_reason"};
  for (const auto& f : figures) measured.push_back(snake_case(f));
  const JobKeys keys = start_table(run, measured, w);
  std::vector<Json> row;
  for (const auto& j : run.jobs) {
    row.clear();
    key_values(keys, j, row);
    row.emplace_back(j.status);
    row.emplace_back(j.exit_reason);
    for (const auto& f : figures) {
      const auto it = j.summary.find(f);
      row.push_back(it == j.summary.end() ? Json(nullptr) : number(it->second));
    }
    w.row(row);
  }
  w.end();
}

// A phase's compare-by value as a number when it is one ("0.05"), so that it sorts and plots.
Json phase_value(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(v)) return number(v);
  return Json(text);
}

// phases: the figures the report's phase and "where the time went" tables show (report/phases.hpp),
// as fractions rather than percentages; NaN figures of a phase that is not a measurement are empty
// and `unmeasured` says why.
void write_phases(const report::LoadedRun& run, TidyWriter& w) {
  std::vector<std::string> columns = {"phase"};
  const std::string key = snake_case(run.compare_by);
  const bool key_column = !key.empty() && key != "phase";
  if (key_column) columns.push_back(key);
  columns.push_back("repeat");  // which measurement of its value (compare.repeats; 0 = the first)
  for (const char* c : {"arrangement",     "jobs",
                        "side_by_side",    "sittings",
                        "other_cpu_share", "train_resource_s",
                        "makespan_s",      "predicted_makespan_s",
                        "samples",         "samples_per_s",
                        "util_mean",       "alloc_util",
                        "launch_share",    "time_to_target_s",
                        "seed_noise",      "wait_s",
                        "launch_s",        "train_s",
                        "eval_s",          "checkpoint_s",
                        "total_s",         "unmeasured"})
    columns.push_back(c);
  w.columns(columns);
  std::vector<Json> row;
  for (const auto& p : run.phases) {
    const auto& t = p.time.mean;
    row = {Json(p.label)};
    if (key_column) row.push_back(phase_value(p.value));
    row.push_back(Json(p.repeat));
    for (Json v : {Json(p.arrangement),
                   Json(p.jobs.size()),
                   Json(p.side_by_side),
                   Json(p.sittings),
                   number(p.other_cpu_share),
                   number(p.train_resource_s),
                   number(p.makespan_s),
                   number(p.predicted_makespan_s),
                   number(p.samples),
                   number(p.samples_per_s),
                   number(p.util_mean),
                   number(p.alloc_util),
                   number(p.unmeasured.empty() ? p.time.launch_share : std::nan("")),
                   number(p.time_to_target_s),
                   number(p.seed_noise),
                   number(t.wait_s),
                   number(t.launch_s),
                   number(t.train_s),
                   number(t.eval_s),
                   number(t.checkpoint_s),
                   number(t.total_s),
                   Json(p.unmeasured)})
      row.push_back(std::move(v));
    w.row(row);
  }
  w.end();
}

// --only: the run's records and job files narrowed to the matching jobs, with the report's own
// selection (report::select_jobs), so that export and report pick the same jobs.
void select_only(report::LoadedRun& run, const std::vector<jobs::Selector>& only) {
  report::ReportOptions ro;
  ro.filters = only_filters(only);
  ro.filter_flag = "--only";
  run.jobs = report::select_jobs(run.jobs, ro);
  std::set<std::string> kept;
  for (const auto& j : run.jobs) kept.insert(j.id);
  run.data.erase(
      std::remove_if(run.data.begin(), run.data.end(), [&](const auto& d) { return !kept.count(d.id); }),
      run.data.end());
  if (run.jobs.empty()) std::cerr << "export: --only matches none of the run's jobs\n";
}

}  // namespace

int cmd_export(const Args& args) {
  ExportCli o;
  po::options_description opts = command_options(o.help);
  add_export_options(opts, o);
  // The flag's name before -o meant --out everywhere (docs/cli.md); still read, not listed.
  po::options_description older;
  older.add_options()("output", po::value(&o.output), "the older name of --out");
  const HelpText help{
      "gridrun export RUN_DIR --what steps|epochs|jobs|phases [options]\n"
      "       gridrun export RUN_DIR --format tensorboard --out DIR [options]",
      "Writes one tidy table of a run's numbers: one header line of snake_case names, one\n"
      "row per step, epoch, job or phase; the job id and the parameters that differ between\n"
      "the jobs (as `gridrun plan` shows them) come first, then the measured values.\n"
      "pandas reads it as is: pandas.read_csv(\"steps.csv\"). Only the jobs of the run's\n"
      "current grid unless --all; --only keeps the matching jobs (as report --only);\n"
      "unreadable job files are named on stderr and skipped.\n"
      "Columns: docs/results.md, \"Export\". --format tensorboard writes a TensorBoard\n"
      "log folder instead (tensorboard --logdir DIR): docs/results.md, \"TensorBoard\".",
      "\nExit codes: 0 ok, 1 runtime failure, 2 bad input.\n"};
  if (!parse_command(args, opts,
                     {{"input", "RUN_DIR",
                       "the run directory (`gridrun run/submit --out OUT`: OUT/NAME),\nor its results.h5", 1,
                       po::value(&o.input)}},
                     "export", o.help, help, std::cout, &older))
    return 0;
  check_export_options(o);
  report::LoadOptions lo;
  lo.all = o.all;
  const bool tensorboard = o.format == "tensorboard";
  lo.depth =
      tensorboard || o.what == "steps" || o.what == "epochs" ? results::Depth::Full : results::Depth::Summary;
  const std::vector<jobs::Selector> only = parse_only(o.only);
  report::LoadedRun run = report::load_run(o.input, std::cerr, lo);
  if (!only.empty()) select_only(run, only);
  if (o.what == "phases" && run.phases.empty())
    std::cerr << "export: " << o.input << " has no phases (its grid has no `compare: {by: ...}`)\n";

  if (tensorboard) {
    report::TensorboardOptions to;
    to.out_dir = o.output;
    report::write_tensorboard(run, to, std::cerr);
    return 0;
  }
  const bool to_stdout = o.output.empty() || o.output == "-";
  std::ostringstream buffer;
  std::ostream& out = to_stdout ? std::cout : buffer;
  TidyWriter w(out, o.format == "json");
  if (o.what == "steps")
    write_table_rows(run, &results::JobData::steps, {"step", "epoch"}, w);
  else if (o.what == "epochs")
    write_table_rows(run, &results::JobData::epochs, {"epoch"}, w);
  else if (o.what == "jobs")
    write_jobs(run, w);
  else
    write_phases(run, w);
  if (!to_stdout) base::write_file_atomic(o.output, buffer.str());
  return 0;
}

}  // namespace gridrun::app
