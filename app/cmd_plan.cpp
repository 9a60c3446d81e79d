// `gridrun plan GRID.yaml`: validate a grid and print its expanded jobs (table, json or csv).
//
// Why plan is separate from run: it needs nothing but the grid file, writes nothing, and shows
// exactly which jobs (ids, order, resources) `run` and `submit` would launch. All flags live in
// PlanOptions, filled in one place (add_plan_options) and validated right after parsing
// (check_plan_options); new flags go into those two functions.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/scheduler/resources.hpp"

namespace gridrun::app {

namespace {

namespace po = boost::program_options;
namespace gj = gridrun::jobs;

constexpr std::size_t kMaxWidth = 100;  // terminal width the table must fit

struct PlanOptions {
  std::string grid;              // positional GRID.yaml
  std::string format = "table";  // table | json | csv
  bool all_params = false;       // table: also list the parameters that are the same in all jobs
  bool list_params = false;      // print the parameter table instead of planning a grid
  bool allow_empty = false;      // a grid whose jobs are all excluded is not an error
  bool help = false;
  // Feasibility check against resources; a plain plan (none of these) checks the grid only, so
  // GPU grids can be planned on a login node without GPUs.
  std::string cluster;           // --cluster FILE
  int gpus = -1;                 // --gpus N
  int cores = -1;                // --cores N
  bool resources_named() const { return !cluster.empty() || gpus >= 0 || cores >= 0; }
};

void add_plan_options(po::options_description& desc, PlanOptions& o) {
  desc.add_options()("help,h", po::bool_switch(&o.help), "show this help and exit")(
      "format,f", po::value(&o.format)->default_value(o.format),
      "output: table (aligned; the parameters that vary, resources), json (every job with all "
      "parameters, as in job files) or csv (one row per job, all parameters)")(
      "all-params", po::bool_switch(&o.all_params),
      "table: also list the parameters that are the same in every job")(
      "allow-empty", po::bool_switch(&o.allow_empty),
      "accept a grid whose jobs are all excluded (prints 0 jobs, exit 0)")(
      "list-params", po::bool_switch(&o.list_params),
      "print every grid parameter (type, default, range, meaning) and exit; honours --format")(
      "cluster", po::value(&o.cluster),
      "also check every job fits on a node of this cluster YAML (see docs/scheduler.md); exit 2 "
      "naming each job that fits nowhere")(
      "gpus", po::value(&o.gpus), "also check every job fits on this machine with N GPUs")(
      "cores", po::value(&o.cores), "also check every job fits on this machine with N cores");
}

void check_plan_options(const PlanOptions& o) {
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    throw std::invalid_argument("--format: '" + o.format + "' is not one of table, json, csv");
  if (!o.list_params && o.grid.empty())
    throw std::invalid_argument("missing GRID.yaml (see gridrun plan --help)");
  // -1 is the "not given" value of both flags.
  if (o.gpus < -1) throw std::invalid_argument("--gpus: must be >= 0");
  if (o.cores == 0 || o.cores < -1) throw std::invalid_argument("--cores: must be >= 1");
  if (!o.cluster.empty() && (o.gpus >= 0 || o.cores >= 0))
    throw std::invalid_argument("--cluster: give either a cluster file or --gpus/--cores, not both");
}

void print_help(const po::options_description& desc) {
  std::cout << "usage: gridrun plan GRID.yaml [--format table|json|csv] [options]\n\n"
               "Validates a grid file and prints the jobs it expands to, in launch order: the\n"
               "job id, the parameters that vary, and the resources each job needs (GPUs, CPU\n"
               "cores = ranks * threads_per_rank, ranks). Then a summary: job count, warnings,\n"
               "and GPU-hours at most, when jobs set time_limit. Warnings go to stderr.\n"
               "Nothing is written. Grid format and parameters: docs/grid.md, --list-params.\n\n"
            << desc
            << "\nExit codes: 0 valid grid, 2 invalid grid or flags (the message names\n"
               "file:line:col and the key, e.g. grid.yaml:7:11: grid.ranks[2]: ...).\n";
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
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
  if (p.min && p.max)
    return (p.min_exclusive ? "(" : "[") + inum(*p.min) + ", " + inum(*p.max) + "]";
  if (p.min) return (p.min_exclusive ? "> " : ">= ") + inum(*p.min);
  if (p.name == "time_limit") return "Slurm time";
  return "";
}

std::string default_text(const gj::ParamSpec& p) {
  std::string s = gj::to_string(p.default_value);
  return s.empty() ? "\"\"" : s;
}

int list_params(const PlanOptions& o) {
  const auto& table = gj::param_table();
  if (o.format == "csv") {
    std::cout << "name,type,default,range,meaning\n";
    for (const auto& p : table)
      std::cout << p.name << ',' << gj::type_name(p.type) << ',' << csv_cell(default_text(p)) << ','
                << csv_cell(range_text(p)) << ',' << csv_cell(p.help) << '\n';
  } else if (o.format == "json") {
    std::cout << "[\n";
    for (std::size_t i = 0; i < table.size(); ++i) {
      const auto& p = table[i];
      std::cout << "  {\"name\":" << json_string(p.name)
                << ",\"type\":" << json_string(gj::type_name(p.type))
                << ",\"default\":" << json_string(gj::to_string(p.default_value))
                << ",\"range\":" << json_string(range_text(p))
                << ",\"meaning\":" << json_string(p.help) << "}"
                << (i + 1 < table.size() ? "," : "") << "\n";
    }
    std::cout << "]\n";
  } else {
    for (const auto& p : table) {
      std::string head = p.name + " (" + gj::type_name(p.type) + ", default " + default_text(p);
      std::string r = range_text(p);
      if (!r.empty()) head += ", " + r;
      std::cout << head << ")\n    " << p.help << "\n";
    }
  }
  return 0;
}

// Prints `lead` followed by `words`, wrapped at kMaxWidth with continuation lines indented.
void wrap(std::ostream& os, const std::string& lead, const std::vector<std::string>& words) {
  std::string line = lead;
  for (const auto& w : words) {
    if (line.size() + 1 + w.size() > kMaxWidth) {
      os << line << '\n';
      line = "  " + w;
    } else {
      line += " " + w;
    }
  }
  os << line << '\n';
}

std::string value_of(const gj::Job& j, const std::string& key) {
  return gj::to_string(j.params.at(key));
}

void print_table(const gj::Expansion& ex, const PlanOptions& o, std::ostream& os) {
  std::vector<std::string> params = ex.varying;
  // Resources come last and ranks is always one of them, so it is not repeated as a parameter.
  params.erase(std::remove(params.begin(), params.end(), "ranks"), params.end());
  std::vector<std::string> head = {"#", "id"};
  head.insert(head.end(), params.begin(), params.end());
  for (const char* r : {"gpus", "cores", "ranks"}) head.push_back(r);

  std::vector<std::vector<std::string>> rows;
  rows.reserve(ex.jobs.size());
  for (const auto& j : ex.jobs) {
    std::vector<std::string> r = {std::to_string(j.index), j.id};
    for (const auto& p : params) r.push_back(value_of(j, p));
    const auto res = gj::job_resources(gj::to_struct(j.params));
    r.push_back(std::to_string(res.gpus));
    r.push_back(std::to_string(res.cores));
    r.push_back(std::to_string(res.ranks));
    rows.push_back(std::move(r));
  }
  std::vector<std::size_t> w(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) w[c] = head[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  // Keep #, id and the three resource columns; when the table is too wide for the terminal, drop
  // global_batch first (it is batch_per_rank * ranks, both shown), then parameter columns from the
  // right, and say which ones were left out.
  std::vector<bool> show(head.size(), true);
  auto width = [&] {
    std::size_t t = 0;
    for (std::size_t c = 0; c < head.size(); ++c)
      if (show[c]) t += w[c] + 2;
    return t - 2;
  };
  std::vector<std::size_t> drop_order;
  for (std::size_t c = 2; c + 3 < head.size(); ++c)
    if (head[c] == "global_batch") drop_order.push_back(c);
  for (std::size_t c = head.size() - 4; c >= 2; --c)
    if (head[c] != "global_batch") drop_order.push_back(c);
  std::vector<std::string> hidden;
  for (std::size_t c : drop_order) {
    if (width() <= kMaxWidth) break;
    show[c] = false;
    hidden.push_back(head[c]);
  }
  auto emit = [&](const std::vector<std::string>& r) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (!show[c]) continue;
      if (!line.empty()) line += "  ";
      bool right = c == 0 || c + 3 >= r.size();  // numbers right-aligned
      std::string pad(w[c] - r[c].size(), ' ');
      line += right ? pad + r[c] : r[c] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  };
  emit(head);
  for (const auto& r : rows) emit(r);
  if (!hidden.empty()) {
    std::vector<std::string> words;
    std::sort(hidden.begin(), hidden.end(), [&](const std::string& a, const std::string& b) {
      return std::find(head.begin(), head.end(), a) < std::find(head.begin(), head.end(), b);
    });
    for (const auto& h : hidden) words.push_back(h + ",");
    words.push_back("use --format csv)");
    wrap(os, "(not shown to fit " + std::to_string(kMaxWidth) + " columns:", words);
  }
  if (o.all_params && !ex.jobs.empty()) {
    std::vector<std::string> words;
    for (const auto& p : gj::param_table()) {
      if (std::find(ex.varying.begin(), ex.varying.end(), p.name) != ex.varying.end()) continue;
      words.push_back(p.name + "=" + value_of(ex.jobs.front(), p.name));
    }
    wrap(os, "same in all jobs:", words);
  }
}

void print_json(const gj::Expansion& ex, std::ostream& os) {
  os << "{\"run\":" << json_string(ex.name) << ",\"source\":" << json_string(ex.source)
     << ",\"compare_by\":" << json_string(ex.compare_by) << ",\n \"varying\":[";
  for (std::size_t i = 0; i < ex.varying.size(); ++i)
    os << (i ? "," : "") << json_string(ex.varying[i]);
  os << "],\n \"warnings\":[";
  for (std::size_t i = 0; i < ex.warnings.size(); ++i)
    os << (i ? "," : "") << "\n  " << json_string(ex.warnings[i]);
  os << "],\n \"jobs\":[";
  for (std::size_t i = 0; i < ex.jobs.size(); ++i)
    os << (i ? "," : "") << "\n  " << gj::job_to_json(ex.jobs[i]);
  os << "\n]}\n";
}

void print_csv(const gj::Expansion& ex, std::ostream& os) {
  const auto& table = gj::param_table();
  os << "index,id";
  for (const auto& p : table) os << ',' << p.name;
  os << ",gpus,cores\n";
  for (const auto& j : ex.jobs) {
    os << j.index << ',' << j.id;
    for (const auto& p : table) os << ',' << csv_cell(value_of(j, p.name));
    const auto res = gj::job_resources(gj::to_struct(j.params));
    os << ',' << res.gpus << ',' << res.cores << '\n';
  }
}

// "12 jobs (4 excluded), 1 warning; at most 6.0 GPU-hours (time_limit x GPUs of 8 GPU jobs)"
std::string summary(const gj::Expansion& ex) {
  std::ostringstream s;
  s << ex.jobs.size() << " job" << (ex.jobs.size() == 1 ? "" : "s");
  std::vector<std::string> notes;
  if (ex.excluded) notes.push_back(std::to_string(ex.excluded) + " excluded");
  if (ex.duplicates) notes.push_back(std::to_string(ex.duplicates) + " duplicates dropped");
  if (!notes.empty()) {
    s << " (";
    for (std::size_t i = 0; i < notes.size(); ++i) s << (i ? ", " : "") << notes[i];
    s << ")";
  }
  s << ", " << ex.warnings.size() << " warning" << (ex.warnings.size() == 1 ? "" : "s");
  std::size_t gpu_jobs = 0, timed = 0;
  double gpu_hours = 0;
  for (const auto& j : ex.jobs) {
    const auto p = gj::to_struct(j.params);
    if (p.device != "gpu") continue;
    ++gpu_jobs;
    if (p.time_limit.empty()) continue;
    ++timed;
    gpu_hours += static_cast<double>(p.ranks) *
                 static_cast<double>(gj::time_limit_seconds(p.time_limit)) / 3600.0;
  }
  if (timed) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", gpu_hours);
    s << "; at most " << buf << " GPU-hours (time_limit x GPUs";
    if (timed < gpu_jobs)
      s << " of " << timed << " of " << gpu_jobs << " GPU jobs; others unlimited";
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
  po::options_description desc("options", static_cast<unsigned>(kMaxWidth) - 2);
  add_plan_options(desc, o);
  po::options_description hidden;
  hidden.add_options()("grid", po::value(&o.grid), "grid file");
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("grid", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(pos).style(kNoGuessing).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(e.what());
  }
  if (o.help) {
    print_help(desc);
    return 0;
  }
  check_plan_options(o);
  if (o.list_params) return list_params(o);

  gj::LoadOptions lo;
  lo.allow_empty = o.allow_empty;
  const gj::Expansion ex = gj::load_grid(o.grid, lo);  // GridError -> exit 2 in main
  for (const auto& w : ex.warnings) std::cerr << "gridrun plan: warning: " << w << "\n";
  if (o.resources_named()) {
    gridrun::scheduler::ResourceOptions ro;
    ro.cluster_file = o.cluster;
    ro.gpus = o.gpus;
    ro.cores = o.cores;
    gridrun::scheduler::check_feasible(ex.jobs, gridrun::scheduler::resolve_cluster(ro));
  }
  std::ostringstream out;
  if (o.format == "json") {
    print_json(ex, out);
  } else if (o.format == "csv") {
    print_csv(ex, out);
  } else {
    out << "run " << ex.name << " from " << ex.source << "\n";
    print_table(ex, o, out);
    out << summary(ex) << "\n";
  }
  std::cout << out.str();
  if (o.format != "table") std::cerr << "gridrun plan: " << summary(ex) << "\n";
  return 0;
}

}  // namespace gridrun::app
