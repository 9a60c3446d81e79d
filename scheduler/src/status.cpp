// `gridrun status`: the merge of state.json, job files, an optional batch-system overlay and the
// results files, and its table/json/csv output. See status.hpp.
#include "gridrun/scheduler/status.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <stdexcept>

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/table.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

// Files gridrun (or gridrun-train) renamed *.damaged instead of trusting them.
std::vector<std::string> damaged_files(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->path().filename().string().find(".damaged") != std::string::npos)
      out.push_back(fs::relative(it->path(), root, ec).string());
  std::sort(out.begin(), out.end());
  return out;
}

JobStatusRow row_from_record(const RunDir& dir, const JobRecord& r) {
  JobStatusRow row;
  row.id = r.id;
  row.state = r.state;
  row.attempts = r.attempts;
  row.slurm_id = r.slurm_job_id;
  if (!r.exit_codes.empty()) row.exit_code = r.exit_codes.back();
  row.node = r.host;
  if (r.end_unix > r.start_unix && r.start_unix > 0) {  // local runs: timings from state.json
    const auto sec = static_cast<long long>(r.end_unix - r.start_unix + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", sec / 3600, sec / 60 % 60, sec % 60);
    row.elapsed = buf;
  }
  row.disk = results::job_status(dir.result_file(r.id));
  std::error_code ec;
  if (row.disk.empty() && fs::exists(dir.partial_file(r.id), ec)) row.disk = "partial";
  return row;
}

// The results file is the final word on how a job ended.
void settle_with_results(JobStatusRow& row) {
  const JobOutcome disk = outcome_from_results(row.disk);
  if (is_finished(disk)) row.state = disk;
  else if (disk == JobOutcome::Failed && !is_queued(row.state)) row.state = JobOutcome::Failed;
  else if (!row.slurm_state.empty() && row.state == JobOutcome::Completed)
    row.state = disk == JobOutcome::Interrupted ? JobOutcome::Interrupted : JobOutcome::Failed;
}

}  // namespace

RunStatus run_status(const RunDir& dir, const StatusOverlay& overlay) {
  const std::string& root = dir.root();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument("RUN_DIR: '" + root + "' is not a directory");
  if (!fs::exists(dir.state_file(), ec) && !fs::exists(dir.jobs_dir(), ec))
    throw std::invalid_argument("RUN_DIR: '" + root + "' has no state.json and no jobs/ (not a run directory)");
  RunStatus st;
  st.run_dir = root;
  st.damaged = damaged_files(root);
  RunState state;
  try {
    state = dir.load_state();
  } catch (const std::exception& e) {
    // Read-only here: the next `gridrun run` quarantines it; states come from the results files.
    st.damaged.push_back("state.json (" + base::printable_line(e.what()) + ")");
  }
  st.name = state.name.empty() ? fs::path(root).filename().string() : state.name;
  // Jobs known from state.json and from job files (a crashed submit may have written only those).
  std::map<std::string, JobRecord> recs = state.jobs;
  for (const auto& e : fs::directory_iterator(dir.jobs_dir(), ec)) {
    if (e.path().extension() != ".json") continue;
    const std::string id = e.path().stem().string();
    if (!recs.count(id)) recs[id].id = id;
  }
  for (const auto& [id, r] : recs) st.jobs.push_back(row_from_record(dir, r));
  if (overlay) overlay(st, recs);
  for (auto& row : st.jobs) {
    settle_with_results(row);
    st.counts[row.state] += 1;
  }
  return st;
}

namespace {

void print_json(const RunStatus& st, std::ostream& os) {
  base::Json counts = base::Json::object();
  for (const auto& [s, n] : st.counts) counts[to_string(s)] = n;
  base::Json jobs = base::Json::array();
  for (const auto& r : st.jobs)
    jobs.push_back({{"id", r.id},           {"state", to_string(r.state)}, {"slurm_id", r.slurm_id},
                    {"slurm_state", r.slurm_state}, {"exit_code", r.exit_code}, {"elapsed", r.elapsed},
                    {"node", r.node},       {"restarts", r.restarts},      {"attempts", r.attempts},
                    {"results", r.disk}});
  const base::Json root = {{"run", st.name},
                           {"run_dir", st.run_dir},
                           {"slurm_answered", st.slurm_answered},
                           {"collect_id", st.collect_ids.empty() ? "" : st.collect_ids.back()},
                           {"collect_state", st.collect_state},
                           {"counts", std::move(counts)},
                           {"damaged", st.damaged},
                           {"jobs", std::move(jobs)}};
  os << root.dump(-1, ' ', false, base::Json::error_handler_t::replace) << "\n";
}

// Table and CSV go through the shared table writer (results/table.hpp), one job per line.
results::Table jobs_table(const RunStatus& st) {
  using results::number_cell;
  using results::text_cell;
  auto text_or_dash = [](const std::string& s) { return text_cell(s.empty() ? "-" : s); };
  results::Table t;
  t.title = "Jobs";
  t.columns = {"id", "state", "slurm_id", "slurm_state", "exit_code", "elapsed", "node", "restarts",
               "attempts", "results"};
  for (const auto& r : st.jobs)
    t.rows.push_back({text_cell(r.id), text_cell(to_string(r.state)), text_or_dash(r.slurm_id),
                      text_or_dash(r.slurm_state),
                      number_cell(r.exit_code < 0 ? std::nan("") : static_cast<double>(r.exit_code), 0),
                      text_or_dash(r.elapsed), text_or_dash(r.node),
                      number_cell(static_cast<double>(r.restarts), 0),
                      number_cell(static_cast<double>(r.attempts), 0), text_or_dash(r.disk)});
  // Too wide for the terminal (long node or results words): Slurm's own words go first.
  t.drop_order = {3, 6, 8, 5};
  return t;
}

void print_csv(const RunStatus& st, std::ostream& os) {
  results::Table t = jobs_table(st);
  // CSV keeps empty fields empty and exit_code -1 for "none", as programs read them.
  for (std::size_t k = 0; k < st.jobs.size(); ++k) {
    const auto& r = st.jobs[k];
    t.rows[k][2] = results::text_cell(r.slurm_id);
    t.rows[k][3] = results::text_cell(r.slurm_state);
    t.rows[k][4] = results::number_cell(static_cast<double>(r.exit_code), 0);
    t.rows[k][5] = results::text_cell(r.elapsed);
    t.rows[k][6] = results::text_cell(r.node);
    t.rows[k][9] = results::text_cell(r.disk);
  }
  results::TableStyle style;
  style.format = "csv";
  style.heading = false;
  results::render_tables({t}, style, os);
}

void print_table(const RunStatus& st, std::ostream& os) {
  os << "run " << st.name << " (" << st.run_dir << "): " << st.jobs.size() << " jobs";
  for (const auto& [s, n] : st.counts) os << ", " << n << " " << to_string(s);
  os << "\n";
  if (st.slurm_queried && !st.slurm_answered)
    os << "note: Slurm did not answer; states come from state.json and results files\n";
  for (const auto& d : st.damaged) os << "damaged (quarantined, not used): " << d << "\n";
  if (!st.collect_ids.empty())
    os << "collect job " << st.collect_ids.back() << ": " << st.collect_state
       << (fs::exists(RunDir(st.run_dir).index_file()) ? "; results.h5 present" : "; no results.h5 yet") << "\n";
  results::TableStyle style;
  style.fit = results::TableStyle::Fit::Drop;
  style.heading = false;
  results::Table t = jobs_table(st);
  // A run no Slurm job belongs to (`gridrun run`) has nothing in the two Slurm columns: left out
  // of the table (CSV and JSON keep every column), so node and results fit.
  const bool any_slurm = std::any_of(st.jobs.begin(), st.jobs.end(), [](const JobStatusRow& r) {
    return !r.slurm_id.empty() || !r.slurm_state.empty();
  });
  if (!any_slurm) {
    t.columns.erase(t.columns.begin() + 2, t.columns.begin() + 4);
    for (auto& row : t.rows) row.erase(row.begin() + 2, row.begin() + 4);
    t.drop_order = {4, 6, 3};  // node, results, elapsed (indices after the erase)
  }
  const auto hidden = results::render_tables({t}, style, os).hidden.front();
  if (hidden.empty()) return;
  os << "(not shown to fit " << style.width << " columns:";
  for (const auto& h : hidden) os << " " << h << ",";
  os << " use --format csv)\n";
}

}  // namespace

void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os) {
  switch (fmt) {
    case StatusFormat::Json: return print_json(st, os);
    case StatusFormat::Csv: return print_csv(st, os);
    case StatusFormat::Table: return print_table(st, os);
  }
}

}  // namespace gridrun::scheduler
