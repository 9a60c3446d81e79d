// `gridrun plan GRID.yaml`: validate a grid and print its expanded jobs (table, json or csv).
//
// Why plan is separate from run: it needs nothing but the grid file, writes nothing, and shows
// exactly which jobs (ids, order, resources) `run` and `submit` would launch. All flags live in
// PlanOptions, filled in one place (add_plan_options) and validated right after parsing
// (check_plan_options); new flags go into those two functions.
//
// Output: the table (what a person reads: the varying parameters and resources) goes through the
// shared table writer (base/table.hpp), like report and status. json and csv are not tables
// of cells: json is each job in its job-file layout, csv every parameter of every job, and both
// stream, formatting each distinct value once per column (Plan below), because a 100,000-job grid
// has 4 million values (bench/jobs/bench_plan_cli.sh).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/dataset/builtin_files.hpp"
#include "gridrun/dataset/data_file.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/scheduler/model_check.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/run_grid.hpp"

namespace gridrun::app {

namespace {

namespace po = boost::program_options;
namespace gj = gridrun::jobs;
// CSV cells and JSON strings are quoted by gridrun::base, like every other file gridrun writes.
using gridrun::base::csv_quote;
using gridrun::base::json_quote;

constexpr std::size_t kMaxWidth =
    100;  // what the tables are written for; --width (default: the terminal's) decides

struct PlanOptions {
  std::string grid;              // positional GRID.yaml
  std::string format = "table";  // table | json | csv
  int width = 0;                 // --width as given (0: the terminal's)
  std::size_t cols = kMaxWidth;  // the width the table and --list-params are fitted to
  bool all_params = false;       // table: also list the parameters that are the same in all jobs
  bool list_params = false;      // print the parameter table instead of planning a grid
  bool allow_empty = false;      // a grid whose jobs are all excluded is not an error
  bool help = false;
  // Feasibility check against resources; a plain plan (none of these) checks the grid only, so
  // GPU grids can be planned on a login node without GPUs.
  std::string cluster;                 // --cluster FILE
  int gpus = -1;                       // --gpus N
  int cores = -1;                      // --cores N
  std::vector<std::string> only, set;  // --only selectors, --set overrides (as given; jobs/select.hpp)
  bool resources_named() const { return !cluster.empty() || gpus >= 0 || cores >= 0; }
};

void add_plan_options(po::options_description& desc, PlanOptions& o) {
  add_table_flags(desc, o.format, o.width,
                  "output: table (aligned; the parameters that vary, resources), json (every job with all "
                  "parameters, as in job files) or csv (one row per job, all parameters)");
  desc.add_options()("all-params", po::bool_switch(&o.all_params),
                     "table: also list the parameters that are the same in every job")(
      "allow-empty", po::bool_switch(&o.allow_empty),
      "accept a grid whose jobs are all excluded (prints 0 jobs, exit 0)")(
      "list-params", po::bool_switch(&o.list_params),
      "print every grid parameter (type, default, range, meaning) and exit; honours --format")(
      "cluster", po::value(&o.cluster),
      "also check every job fits on a node of this cluster YAML (see docs/scheduler.md); exit 2 "
      "naming each job that fits nowhere")("gpus", po::value(&o.gpus),
                                           "also check every job fits on this machine with N GPUs")(
      "cores", po::value(&o.cores), "also check every job fits on this machine with N cores");
  add_select_flags(desc, o.only, o.set);
}

void check_plan_options(const PlanOptions& o) {
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    throw std::invalid_argument("--format: '" + o.format + "' is not one of table, json, csv");
  if (!o.list_params && o.grid.empty())
    throw std::invalid_argument("missing GRID.yaml (see gridrun plan --help)");
  if (!o.list_params) check_grid_path(o.grid);  // a run folder: the command meant (issue 58)
  // -1 is the "not given" value of both flags.
  if (o.gpus < -1) throw std::invalid_argument("--gpus: must be >= 0");
  if (o.cores == 0 || o.cores < -1) throw std::invalid_argument("--cores: must be >= 1");
  if (!o.cluster.empty() && (o.gpus >= 0 || o.cores >= 0))
    throw std::invalid_argument("--cluster: give either a cluster file or --gpus/--cores, not both");
}

std::string range_text(const gj::ParamSpec& p) {
  if (!p.choices.empty()) {
    std::string s;
    for (const auto& c : p.choices) s += (s.empty() ? "" : "|") + c;
    return s;
  }
  auto num = [](double d) { return gj::to_string(gj::Value{d}); };
  auto inum = [&](double d) {
    return p.type == gj::Type::Int ? std::to_string(static_cast<long long>(d)) : num(d);
  };
  if (p.min && p.max) return (p.min_exclusive ? "(" : "[") + inum(*p.min) + ", " + inum(*p.max) + "]";
  if (p.min) return (p.min_exclusive ? "> " : ">= ") + inum(*p.min);
  if (p.name == "time_limit") return "Slurm time";
  return "";
}

std::string default_text(const gj::ParamSpec& p) {
  std::string s = gj::to_string(p.default_value);
  return s.empty() ? "\"\"" : s;
}

// Prints `lead` followed by `words`, wrapped at `width` with continuation lines indented by
// `indent`.
void wrap(std::ostream& os, std::size_t width, const std::string& lead, const std::vector<std::string>& words,
          const std::string& indent = "  ") {
  for (const auto& line : gridrun::base::wrap_words(lead, words, width, indent)) os << line << '\n';
}

int list_params(const PlanOptions& o) {
  const auto& table = gj::param_table();
  if (o.format == "csv") {
    std::cout << "name,type,default,range,meaning\n";
    for (const auto& p : table)
      std::cout << p.name << ',' << gj::type_name(p.type) << ',' << csv_quote(default_text(p)) << ','
                << csv_quote(range_text(p)) << ',' << csv_quote(p.help) << '\n';
  } else if (o.format == "json") {
    std::cout << "[\n";
    for (std::size_t i = 0; i < table.size(); ++i) {
      const auto& p = table[i];
      std::cout << "  {\"name\":" << json_quote(p.name) << ",\"type\":" << json_quote(gj::type_name(p.type))
                << ",\"default\":" << json_quote(gj::to_string(p.default_value))
                << ",\"range\":" << json_quote(range_text(p)) << ",\"meaning\":" << json_quote(p.help) << "}"
                << (i + 1 < table.size() ? "," : "") << "\n";
    }
    std::cout << "]\n";
  } else {
    for (const auto& p : table) {
      std::string head = p.name + " (" + gj::type_name(p.type) + ", default " + default_text(p);
      std::string r = range_text(p);
      // A long list of choices goes on lines of its own, so the output fits the terminal.
      const bool long_range = head.size() + r.size() + 3 > o.cols;
      if (!r.empty() && !long_range) head += ", " + r;
      std::cout << head << ")\n";
      if (long_range) wrap(std::cout, o.cols, "    one of:", gridrun::base::split(r, '|'), "    ");
      wrap(std::cout, o.cols, "   ", gridrun::base::split(p.help, ' '), "    ");
    }
  }
  return 0;
}

// Output of 100,000-job plans is tens of MB: it goes to stdout in 1 MB blocks instead of through
// an ostringstream that holds (and copies) all of it.
class Out {
 public:
  ~Out() { flush(); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= (1u << 20)) flush();
  }
  void flush() {
    if (!buf_.empty()) std::fwrite(buf_.data(), 1, buf_.size(), stdout);
    buf_.clear();
  }

 private:
  std::string buf_;
};

// The jobs as plan prints them: per parameter (param_table() order) the distinct values, and per
// job one small code per parameter. A grid's columns take few distinct values, so each value is
// formatted once per column instead of once per job, and no per-job parameter map is built (that
// map was most of the time and memory of a 100,000-job plan).
class Plan {
 public:
  Plan() : table_(gj::param_table()), cols_(table_.size()) {
    for (std::size_t c = 0; c < table_.size(); ++c) {
      if (table_[c].name == "device") device_ = c;
      if (table_[c].name == "ranks") ranks_ = c;
      if (table_[c].name == "threads_per_rank") threads_ = c;
      if (table_[c].name == "time_limit") time_limit_ = c;
    }
  }

  // A command grid's own parameters (Expansion::own_params): columns after param_table()'s. Set
  // before the first add(const Job&); streamed jobs bring their values (add below) before it.
  void set_own(const std::vector<std::string>& names) { own_ = names; }
  const std::vector<std::string>& own() const { return own_; }

  void add(std::size_t index, const std::string& id, const std::vector<gj::Value>& v) {
    if (ids_.empty() && v.size() > cols_.size()) cols_.resize(v.size());  // own values after the table's
    index_.push_back(index);
    ids_.push_back(id);
    for (std::size_t c = 0; c < cols_.size(); ++c) codes_.push_back(cols_[c].code(v[c]));
  }
  void add(const gj::Job& j) {  // from a stored expansion: its values in table order, then its own
    std::vector<gj::Value> v = gj::param_values(j.params);
    for (const auto& name : own_) v.push_back(gj::get_param(j.params, name));
    add(j.index, j.id, v);
  }

  std::size_t size() const { return ids_.size(); }
  std::size_t columns() const { return cols_.size(); }
  std::size_t column_of(const std::string& name) const {
    for (std::size_t c = 0; c < table_.size(); ++c)
      if (table_[c].name == name) return c;
    for (std::size_t k = 0; k < own_.size(); ++k)
      if (own_[k] == name) return table_.size() + k;
    throw std::logic_error("no parameter " + name);
  }
  std::size_t index(std::size_t j) const { return index_[j]; }
  const std::string& id(std::size_t j) const { return ids_[j]; }
  std::uint32_t code(std::size_t j, std::size_t c) const { return codes_[j * cols_.size() + c]; }
  const gj::Value& value(std::size_t j, std::size_t c) const { return cols_[c].values[code(j, c)]; }
  const std::string& text(std::size_t j, std::size_t c) { return cols_[c].text(code(j, c)); }
  const std::string& csv(std::size_t j, std::size_t c) { return cols_[c].csv(code(j, c)); }
  const std::string& member(std::size_t j, std::size_t c) {
    return cols_[c].member(c < table_.size() ? table_[c].name : own_[c - table_.size()], code(j, c));
  }

  // What job j occupies (its GPUs, cores and ranks in all), by the one rule in jobs::footprint,
  // cached per distinct (device, ranks, threads_per_rank).
  const gj::Footprint& footprint(std::size_t j) const {
    const auto key = std::make_tuple(code(j, device_), code(j, ranks_), code(j, threads_));
    auto it = res_.find(key);
    if (it != res_.end()) return it->second;
    gj::JobParams jp;
    gj::set_param(jp, "device", value(j, device_));
    jp.ranks = std::get<std::int64_t>(value(j, ranks_));
    jp.threads_per_rank = std::get<std::int64_t>(value(j, threads_));
    return res_[key] = gj::footprint(jp);
  }
  const std::string& time_limit(std::size_t j) const { return std::get<std::string>(value(j, time_limit_)); }

 private:
  struct Column {
    std::map<gj::Value, std::uint32_t> codes;
    std::vector<gj::Value> values;
    std::vector<std::string> texts, csvs, members;
    bool has_last = false;
    gj::Value last;
    std::uint32_t last_code = 0;

    std::uint32_t code(const gj::Value& v) {
      if (has_last && v == last) return last_code;  // jobs come in grid order: usually a repeat
      auto [it, inserted] = codes.emplace(v, static_cast<std::uint32_t>(values.size()));
      if (inserted) values.push_back(v);
      has_last = true;
      last = v;
      return last_code = it->second;
    }
    const std::string& text(std::uint32_t k) {
      fill(texts, k, [&] { return gj::to_string(values[k]); });
      return texts[k];
    }
    const std::string& csv(std::uint32_t k) {
      fill(csvs, k, [&] { return csv_quote(gj::to_string(values[k])); });
      return csvs[k];
    }
    // `"name":value` exactly as canonical_json writes the member.
    const std::string& member(const std::string& name, std::uint32_t k) {
      fill(members, k, [&] {
        const std::string one = gj::canonical_json(gj::Params{{name, values[k]}});
        return one.substr(1, one.size() - 2);
      });
      return members[k];
    }
    template <class F>
    void fill(std::vector<std::string>& cache, std::uint32_t k, F make) {
      if (cache.size() < values.size()) cache.resize(values.size());
      if (cache[k].empty()) cache[k] = make();
    }
  };

  const std::vector<gj::ParamSpec>& table_;
  std::vector<std::string> own_;
  std::vector<Column> cols_;
  std::size_t device_ = 0, ranks_ = 0, threads_ = 0, time_limit_ = 0;
  std::vector<std::size_t> index_;
  std::vector<std::string> ids_;
  std::vector<std::uint32_t> codes_;
  mutable std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, gj::Footprint> res_;
};

// One line per job through the shared table writer (base/table.hpp), fitted to the terminal
// by leaving out columns: #, id and the three resource columns always show; global_batch goes
// first (it is batch_per_rank * ranks, both shown), then parameter columns from the right.
void print_table(const gj::Expansion& ex, Plan& plan, const PlanOptions& o, std::ostream& os) {
  namespace gr = gridrun::base;  // the table writer
  std::vector<std::string> params = ex.varying;
  // Resources come last and ranks is always one of them, so it is not repeated as a parameter.
  params.erase(std::remove(params.begin(), params.end(), "ranks"), params.end());
  gr::Table t;
  t.columns = {"#", "id"};
  t.columns.insert(t.columns.end(), params.begin(), params.end());
  for (const char* r : {"gpus", "cores", "ranks"}) t.columns.push_back(r);

  std::vector<std::size_t> param_cols;
  for (const auto& p : params) param_cols.push_back(plan.column_of(p));
  t.generated_rows = plan.size();
  t.make_row = [&](std::size_t j, std::vector<gr::Cell>& r) {
    r.push_back(gr::number_cell(static_cast<double>(plan.index(j)), 0));
    r.push_back(gr::text_cell(plan.id(j)));
    for (std::size_t c : param_cols) r.push_back(gr::text_cell(plan.text(j, c)));
    const auto& res = plan.footprint(j);
    for (auto v : {res.gpus, res.cores, res.ranks}) r.push_back(gr::number_cell(static_cast<double>(v), 0));
  };
  const std::size_t n = t.columns.size();
  for (std::size_t c = 2; c + 3 < n; ++c)
    if (t.columns[c] == "global_batch") t.drop_order.push_back(c);
  for (std::size_t c = n - 4; c >= 2; --c)
    if (t.columns[c] != "global_batch") t.drop_order.push_back(c);
  gr::TableStyle style;
  style.width = static_cast<int>(o.cols);
  style.fit = gr::TableStyle::Fit::Drop;
  style.heading = false;
  std::vector<gr::Table> tables;  // moved in: an initializer list would copy every row
  tables.push_back(std::move(t));
  gr::render_tables(tables, style, os);  // names any left-out columns under the rows
  if (o.all_params && plan.size() > 0) {
    std::vector<std::string> words;
    std::vector<std::string> names;
    for (const auto& p : gj::param_table()) names.push_back(p.name);
    names.insert(names.end(), ex.own_params.begin(), ex.own_params.end());
    for (const auto& name : names) {
      if (std::find(ex.varying.begin(), ex.varying.end(), name) != ex.varying.end()) continue;
      if (name == "user_params" && !ex.own_params.empty()) continue;  // its members are listed by name
      words.push_back(name + "=" + plan.text(0, plan.column_of(name)));
    }
    wrap(os, o.cols, "same in all jobs:", words);
  }
}

void print_json(const gj::Expansion& ex, Plan& plan, Out& out) {
  std::string& b = out.buf();
  b += "{\"run\":" + json_quote(ex.name) + ",\"source\":" + json_quote(ex.source) +
       ",\"compare_by\":" + json_quote(ex.compare_by) + ",\n \"varying\":[";
  for (std::size_t i = 0; i < ex.varying.size(); ++i) b += (i ? "," : "") + json_quote(ex.varying[i]);
  b += "],\n \"warnings\":[";
  for (std::size_t i = 0; i < ex.warnings.size(); ++i)
    b += (i ? ",\n  " : "\n  ") + json_quote(ex.warnings[i]);
  b += "],\n \"jobs\":[";
  // jobs::job_to_json's layout: params in canonical (name) order, no meta for planned jobs.
  const auto& table = gj::param_table();
  std::vector<std::size_t> by_name(table.size());
  for (std::size_t c = 0; c < by_name.size(); ++c) by_name[c] = c;
  std::sort(by_name.begin(), by_name.end(),
            [&](std::size_t a, std::size_t c) { return table[a].name < table[c].name; });
  const std::string run = json_quote(ex.name);
  for (std::size_t j = 0; j < plan.size(); ++j) {
    b += j ? ",\n  " : "\n  ";
    b += "{\"id\":\"";
    b += plan.id(j);
    b += "\",\"run\":";
    b += run;
    b += ",\"index\":";
    b += std::to_string(plan.index(j));
    b += ",\"params\":{";
    for (std::size_t k = 0; k < by_name.size(); ++k) {
      if (k) b += ',';
      b += plan.member(j, by_name[k]);
    }
    b += "},\"meta\":{}}";
    out.maybe_flush();
  }
  b += "\n]}\n";
}

void print_csv(Plan& plan, Out& out) {
  const auto& table = gj::param_table();
  std::string& b = out.buf();
  b += "index,id";
  for (const auto& p : table) b += ',' + p.name;
  for (const auto& name : plan.own()) b += ',' + name;
  b += ",gpus,cores\n";
  for (std::size_t j = 0; j < plan.size(); ++j) {
    b += std::to_string(plan.index(j));
    b += ',';
    b += plan.id(j);
    for (std::size_t c = 0; c < plan.columns(); ++c) {
      b += ',';
      b += plan.csv(j, c);
    }
    const auto& res = plan.footprint(j);
    b += ',';
    b += std::to_string(res.gpus);
    b += ',';
    b += std::to_string(res.cores);
    b += '\n';
    out.maybe_flush();
  }
}

// "12 jobs (4 excluded), 1 warning; at most 6.0 GPU-hours (time_limit x GPUs of 8 GPU jobs)"
std::string summary(const gj::Expansion& ex, const Plan& plan) {
  std::ostringstream s;
  s << plan.size() << " job" << (plan.size() == 1 ? "" : "s");
  std::vector<std::string> notes;
  if (ex.excluded) notes.push_back(std::to_string(ex.excluded) + " excluded");
  if (ex.duplicates) notes.push_back(std::to_string(ex.duplicates) + " duplicates dropped");
  if (plan.size() < ex.jobs.size())  // ex.jobs is empty when streamed (no --only)
    notes.push_back("selected by --only from " + std::to_string(ex.jobs.size()));
  if (!notes.empty()) {
    s << " (";
    for (std::size_t i = 0; i < notes.size(); ++i) s << (i ? ", " : "") << notes[i];
    s << ")";
  }
  s << ", " << ex.warnings.size() << " warning" << (ex.warnings.size() == 1 ? "" : "s");
  std::size_t gpu_jobs = 0, timed = 0;
  double gpu_hours = 0;
  for (std::size_t j = 0; j < plan.size(); ++j) {
    const gj::Footprint& fp = plan.footprint(j);
    if (!fp.gpu()) continue;
    ++gpu_jobs;
    if (plan.time_limit(j).empty()) continue;
    ++timed;
    gpu_hours += static_cast<double>(fp.gpus) *
                 static_cast<double>(gj::time_limit_seconds(plan.time_limit(j))) / 3600.0;
  }
  if (timed) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", gpu_hours);
    s << "; at most " << buf << " GPU-hours (time_limit x GPUs";
    if (timed < gpu_jobs) s << " of " << timed << " of " << gpu_jobs << " GPU jobs; others unlimited";
    s << ")";
  } else if (gpu_jobs) {
    s << "; " << gpu_jobs << " GPU job" << (gpu_jobs == 1 ? "" : "s")
      << ", no GPU-hours estimate (no time_limit)";
  }
  return s.str();
}

}  // namespace

int cmd_plan(const Args& args) {
  PlanOptions o;
  po::options_description desc = command_options(o.help);
  add_plan_options(desc, o);
  const HelpText help{"gridrun plan GRID.yaml [options]\n       gridrun plan --list-params [options]",
                      "Validates a grid file and prints the jobs it expands to, in launch order: the\n"
                      "job id, the parameters that vary, and the resources each job needs (GPUs, CPU\n"
                      "cores = ranks * threads_per_rank, ranks). Then a summary: job count, warnings,\n"
                      "and GPU-hours at most, when jobs set time_limit. Warnings go to stderr.\n"
                      "Nothing is written. Grid format and parameters: docs/grid.md, --list-params.",
                      "\nExit codes: 0 valid grid, 2 invalid grid or flags (the message names\n"
                      "file:line:col and the key, e.g. grid.yaml:7:11: grid.ranks[2]: ...).\n"};
  if (!parse_command(args, desc,
                     {{"grid", "GRID.yaml", "the grid file (docs/grid.md)", 1, po::value(&o.grid)}}, "plan",
                     o.help, help, std::cout))
    return 0;
  o.cols = static_cast<std::size_t>(table_width(o.width));
  check_plan_options(o);
  if (o.list_params) return list_params(o);

  gj::LoadOptions lo;
  lo.allow_empty = o.allow_empty;
  lo.overrides = gj::parse_overrides(o.set, "--set");
  lo.warn_lost_compare = true;
  const std::vector<gj::Selector> only = gj::parse_selectors(o.only, "--only", {"id"});
  Plan plan;
  // The feasibility check and --only need the jobs themselves; a plain plan only prints them, so
  // it takes them as they are expanded, without a parameter map per job.
  const bool keep_jobs = o.resources_named() || !only.empty();
  // The (dataset, data_dir) pairs of the planned jobs: their files are checked once expanded.
  std::set<std::pair<std::string, std::string>> data_used;
  const auto at = [](const char* key) {
    return static_cast<std::size_t>(gj::find_param(key) - gj::param_table().data());
  };
  const std::size_t dataset_at = at("dataset"), data_dir_at = at("data_dir");
  if (!keep_jobs)
    lo.on_job = [&](std::size_t index, const std::string& id, const std::vector<gj::Value>& v) {
      data_used.emplace(gj::to_string(v.at(dataset_at)), gj::to_string(v.at(data_dir_at)));
      plan.add(index, id, v);
    };
  // Never freed: the process ends right after printing, and tearing down a 100,000-job expansion
  // costs a noticeable share of the command. Reachable through a static, so leak checkers do not
  // count it; volatile, or the optimizer drops the store to a static nothing reads (LeakSanitizer
  // then reported it: the ASan lane, issue 24).
  [[maybe_unused]] static const gj::Expansion* volatile kept = nullptr;
  lo.check_data_file = gridrun::dataset::check_job_data_file;
  // A model=torchscript job's model built by gridrun-train in a memory-limited child (exit 2 at
  // the grid's model_file line when it cannot be): what run and submit check before launching.
  lo.check_model_file = gridrun::scheduler::model_checker(gridrun::scheduler::default_train_bin()).callback();
  auto* expansion = new gj::Expansion(gj::load_grid(o.grid, lo));  // GridError -> exit 2 in main
  kept = expansion;
  const gj::Expansion& ex = *expansion;
  plan.set_own(ex.own_params);
  for (const auto& w : ex.warnings) std::cerr << "gridrun plan: warning: " << w << "\n";
  // A --set or --only that takes the grid's comparison away: counted and listed with the warnings.
  auto lost_compare = [&](const std::string& w) {
    if (w.empty()) return;
    std::cerr << "gridrun plan: warning: " << w << "\n";
    expansion->warnings.push_back(w);
  };
  lost_compare(ex.compare_gone);
  if (keep_jobs) {
    const std::vector<gj::Job> selected = only.empty() ? ex.jobs : gj::select_jobs(ex.jobs, only);
    lost_compare(gj::lost_compare_warning(ex, selected, only));
    if (o.resources_named()) {
      gridrun::scheduler::ResourceOptions ro;
      ro.cluster_file = o.cluster;
      ro.gpus = o.gpus;
      ro.cores = o.cores;
      gridrun::scheduler::check_feasible(selected, gridrun::scheduler::resolve_cluster(ro));
    }
    for (const auto& j : selected) {
      data_used.emplace(j.params.dataset, j.params.data_dir);
      plan.add(j);
    }
  }
  // A built-in data set's files, as data_file's above: exit 2 at the grid's data_dir (issue 58).
  gridrun::dataset::check_builtin_data(o.grid, lo, data_used);
  std::cout.flush();
  {
    Out out;
    if (o.format == "json") {
      print_json(ex, plan, out);
    } else if (o.format == "csv") {
      print_csv(plan, out);
    } else {
      std::ostringstream table;
      table << "run " << ex.name << " from " << ex.source << "\n";
      print_table(ex, plan, o, table);
      table << summary(ex, plan) << "\n";
      out.buf() = table.str();
    }
  }
  std::fflush(stdout);
  if (o.format != "table") std::cerr << "gridrun plan: " << summary(ex, plan) << "\n";
  return 0;
}

}  // namespace gridrun::app
