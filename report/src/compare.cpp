// The comparison of several runs (compare.hpp): jobs matched by id, one row per configuration in
// at least two runs, each run's figures and its ratios to the first run.
#include "gridrun/report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <variant>

namespace gridrun::report {

using base::Cell;
using base::number_cell;
using base::Table;
using base::text_cell;
using results::JobRecord;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Ids listed per run in the note on configurations of one run only; the rest are counted.
constexpr std::size_t kListedIds = 5;

double fig(const JobRecord* j, const std::string& name) {
  if (!j) return kNaN;
  const auto it = j->summary.find(name);
  return it == j->summary.end() ? kNaN : it->second;
}

// b / a, NaN unless both are positive numbers (a ratio to a failed job's missing figure is none).
double ratio(double b, double a) { return a > 0 && b > 0 ? b / a : kNaN; }

// Numbers by value ("2" before "10"), anything else as text: the order of the single-run report.
bool value_less(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea);
  const double y = std::strtod(b.c_str(), &eb);
  if (!a.empty() && !b.empty() && !*ea && !*eb) return x < y;
  return a < b;
}

// The first run's record of a configuration (every one has at least two).
const JobRecord& any_record(const MatchedConfig& c) {
  for (const auto* j : c.jobs)
    if (j) return *j;
  throw std::logic_error("a matched configuration without records");
}

Cell param_cell(const JobRecord& j, const std::string& key) {
  const auto v = results::param_value(j.params, key);
  const std::string text = results::param_text(j.params, key);
  Cell c = text_cell(text.empty() ? "-" : text);
  if (v && (std::holds_alternative<std::int64_t>(*v) || std::holds_alternative<double>(*v))) {
    c.numeric = true;
    c.value = std::strtod(text.c_str(), nullptr);
  }
  return c;
}

// The distinct values of a root attribute of a run's job files, joined: one value for a run made
// on one machine with one build.
std::string run_fact(const LoadedRun& run, const std::string& attr) {
  std::set<std::string> values;
  for (const auto& d : run.data) {
    const std::string v = d.attr_string(attr);
    if (!v.empty()) values.insert(v);
  }
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out.empty() ? "-" : out;
}

std::string folder_of(const LoadedRun& run) {
  std::string f = run.run_dir;
  while (f.size() > 1 && f.back() == '/') f.pop_back();
  return f;
}

// The header: which run is A, B, ...; where it lies; and the facts that tell the machines or
// builds apart (shown only where they differ: the same host twice says nothing).
Table runs_table(const std::vector<LoadedRun>& runs, const std::vector<std::vector<JobRecord>>& selected) {
  Table t;
  t.title = "Runs";
  t.columns = {"run", "folder", "jobs"};
  std::vector<std::string> facts;
  for (const char* attr : {"hostname", "cpu_model", "torch_version"}) {
    std::set<std::string> distinct;
    for (const auto& r : runs) distinct.insert(run_fact(r, attr));
    if (distinct.size() > 1) facts.push_back(attr);
  }
  for (const auto& f : facts) t.columns.push_back(f == "hostname" ? "host" : f);
  for (std::size_t k = 0; k < runs.size(); ++k) {
    std::vector<Cell> row = {text_cell(run_label(k)), text_cell(folder_of(runs[k])),
                             number_cell(static_cast<double>(selected[k].size()), 0)};
    for (const auto& f : facts) row.push_back(text_cell(run_fact(runs[k], f)));
    t.rows.push_back(std::move(row));
  }
  std::size_t left_out = 0;
  for (const auto& r : runs) left_out += r.left_out;
  if (left_out)
    t.notes.push_back(std::to_string(left_out) +
                      " job(s) of earlier grids in these run directories are left out (--all shows them).");
  return t;
}

Table configs_table(const RunMatch& m, std::size_t n_runs) {
  Table t;
  t.title = "Configurations across runs";
  std::vector<const results::RecordedParams*> params;
  for (const auto& c : m.rows)
    for (const auto* j : c.jobs)
      if (j) params.push_back(&j->params);
  const std::vector<std::string> vary = results::varying_params(params);
  std::vector<const MatchedConfig*> rows;
  for (const auto& c : m.rows) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [&](const MatchedConfig* a, const MatchedConfig* b) {
    for (const auto& k : vary) {
      const std::string x = results::param_text(any_record(*a).params, k);
      const std::string y = results::param_text(any_record(*b).params, k);
      if (x != y) return value_less(x, y);
    }
    return a->id < b->id;
  });

  const std::string first = run_label(0);
  t.columns = {"id"};
  for (const auto& k : vary) t.columns.push_back(k);
  // Grouped by figure, so the runs' values of one figure stand side by side with their ratios.
  for (std::size_t k = 0; k < n_runs; ++k) t.columns.push_back(run_label(k) + " samples/s");
  for (std::size_t k = 1; k < n_runs; ++k) t.columns.push_back(run_label(k) + "/" + first + " samples/s");
  for (std::size_t k = 0; k < n_runs; ++k) t.columns.push_back(run_label(k) + " p50_ms");
  for (std::size_t k = 1; k < n_runs; ++k) t.columns.push_back(run_label(k) + "/" + first + " p50");
  for (std::size_t k = 0; k < n_runs; ++k) t.columns.push_back(run_label(k) + " test_acc");
  for (std::size_t k = 0; k < n_runs; ++k) t.columns.push_back(run_label(k) + " status");

  for (const MatchedConfig* c : rows) {
    const auto& j = c->jobs;
    std::vector<Cell> r = {text_cell(c->id)};
    for (const auto& k : vary) r.push_back(param_cell(any_record(*c), k));
    for (std::size_t k = 0; k < n_runs; ++k) r.push_back(number_cell(fig(j[k], "samples_per_s"), 1));
    for (std::size_t k = 1; k < n_runs; ++k)
      r.push_back(number_cell(ratio(fig(j[k], "samples_per_s"), fig(j[0], "samples_per_s")), 3));
    for (std::size_t k = 0; k < n_runs; ++k) r.push_back(number_cell(fig(j[k], "step_s_p50") * 1e3, 2));
    for (std::size_t k = 1; k < n_runs; ++k)
      r.push_back(number_cell(ratio(fig(j[k], "step_s_p50"), fig(j[0], "step_s_p50")), 3));
    for (std::size_t k = 0; k < n_runs; ++k) r.push_back(number_cell(fig(j[k], "final_test_acc"), 3));
    for (std::size_t k = 0; k < n_runs; ++k) r.push_back(text_cell(j[k] ? j[k]->status : "-"));
    t.rows.push_back(std::move(r));
  }

  if (rows.empty())
    t.notes.push_back(
        "no configuration is in two of the runs: jobs are matched by id, the hash of their "
        "parameters, so runs of different grids share none.");
  std::size_t only = 0;
  std::string which;
  for (std::size_t k = 0; k < m.only.size(); ++k) {
    if (m.only[k].empty()) continue;
    only += m.only[k].size();
    std::string ids;
    for (std::size_t i = 0; i < std::min(kListedIds, m.only[k].size()); ++i)
      ids += (ids.empty() ? "" : ", ") + m.only[k][i];
    if (m.only[k].size() > kListedIds) ids += ", ...";
    which += (which.empty() ? "" : "; ") + run_label(k) + " " + std::to_string(m.only[k].size()) + " (" +
             ids + ")";
  }
  if (only)
    t.notes.push_back(std::to_string(only) + " configuration(s) in one run only, not compared: " + which +
                      ".");
  t.notes.push_back(
      "Jobs are matched by id (the hash of a job's parameters: the same grid gives the same ids on any "
      "machine and build). " +
      run_label(1) + "/" + first + ": run " + run_label(1) + "'s figure over run " + first +
      "'s; samples/s above 1 or p50 below 1: faster than " + first +
      ". p50: step time after the warm-up steps. '-': not in that run, or no figure.");
  return t;
}

}  // namespace

RunMatch match_runs(const std::vector<std::vector<JobRecord>>& runs) {
  // id -> its record in each run (the first one where a run lists the id twice).
  std::map<std::string, std::vector<const JobRecord*>> by_id;
  for (std::size_t k = 0; k < runs.size(); ++k)
    for (const auto& j : runs[k]) {
      auto& slot = by_id.try_emplace(j.id, runs.size(), nullptr).first->second;
      if (!slot[k]) slot[k] = &j;
    }
  RunMatch m;
  m.only.resize(runs.size());
  for (auto& [id, jobs] : by_id) {
    const auto present = std::count_if(jobs.begin(), jobs.end(), [](const JobRecord* j) { return j; });
    if (present >= 2) {
      m.rows.push_back(MatchedConfig{id, std::move(jobs)});
    } else {
      for (std::size_t k = 0; k < jobs.size(); ++k)
        if (jobs[k]) m.only[k].push_back(id);
    }
  }
  return m;
}

std::string run_label(std::size_t k) {
  if (k < 26) return std::string(1, static_cast<char>('A' + k));
  return "R" + std::to_string(k + 1);
}

std::vector<Table> compare_tables(const std::vector<LoadedRun>& runs, const ReportOptions& opts) {
  std::vector<std::vector<JobRecord>> selected;
  for (const auto& r : runs) selected.push_back(select_jobs(r.jobs, opts));
  const RunMatch m = match_runs(selected);
  return {runs_table(runs, selected), configs_table(m, runs.size())};
}

void write_comparison(const std::vector<std::string>& inputs, const ReportOptions& opts, std::ostream& out,
                      std::ostream& log) {
  if (inputs.size() < 2) throw std::invalid_argument("comparing runs needs two runs or more");
  // The comparison is one table of configurations; grouping it would split the rows it lines up.
  if (!opts.group_by.empty())
    throw std::invalid_argument("--group-by applies to the report of one run, not to a comparison of runs");
  LoadOptions lo;
  lo.depth = results::Depth::Summary;  // the job records' /summary and the files' root attributes
  lo.all = opts.all;
  std::vector<LoadedRun> runs;
  for (const auto& in : inputs) runs.push_back(load_run(in, log, lo));
  render(compare_tables(runs, opts), opts, out);
}

}  // namespace gridrun::report
