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
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/failure.hpp"

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

// What the results folder says of a job: the glance of its file (`<id>.h5`, else the live
// `<id>.h5.partial`, whose status shows as "partial").
struct DiskGlance {
  std::string status, exit_reason;
  std::vector<results::Attempt> attempts;
};

// Every job's file read once, at glance depth, through the results folder's index: a finished run
// reads no job file at all, a run where k files changed reads those k (run_reader.hpp).
std::map<std::string, DiskGlance> glance_results(const run::RunDir& dir) {
  std::map<std::string, DiskGlance> out;
  const std::string folder = dir.results_dir();
  results::FolderReadOptions fo;
  fo.depth = results::Depth::Glance;
  results::ResultsFolder rf(folder);
  std::vector<std::string> partial_after_bad_final;
  for (const auto& r : rf.read(results::list_job_files(folder), fo)) {
    const bool partial = base::ends_with(r.name, ".partial");
    const std::string id = r.name.substr(0, r.name.find(".h5"));
    if (!r.ok) {
      // An unreadable final file with a live .partial beside it: the .partial tells the state.
      std::error_code ec;
      if (!partial && fs::exists(dir.partial_file(id), ec))
        partial_after_bad_final.push_back(run::RunDir::partial_file_name(id));
      continue;
    }
    DiskGlance& g = out[id];
    g.status = partial ? "partial" : r.data.status;
    g.exit_reason = r.data.exit_reason;
    g.attempts = r.data.attempts;
  }
  for (const auto& r : rf.read(partial_after_bad_final, fo)) {
    if (!r.ok) continue;
    DiskGlance& g = out[r.name.substr(0, r.name.find(".h5"))];
    g.status = "partial";
    g.attempts = r.data.attempts;
  }
  return out;
}

JobStatusRow row_from_record(const run::JobRecord& r, const DiskGlance* glance) {
  JobStatusRow row;
  row.id = r.id;
  row.state = r.state;
  row.attempts = r.attempts;
  row.slurm_id = r.slurm_job_id;
  if (!r.exit_codes.empty()) row.exit_code = r.exit_codes.back();
  row.node = r.host;
  if (r.end_unix > r.start_unix && r.start_unix > 0) {  // local runs: timings from state.json
    const auto sec = std::llround(r.end_unix - r.start_unix);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", sec / 3600, sec / 60 % 60, sec % 60);
    row.elapsed = buf;
  }
  if (glance) {
    row.disk = glance->status;
    for (const auto& a : glance->attempts)
      row.attempt_hosts.push_back(a.hostnames.empty() ? a.hostname : a.hostnames);
  }
  if (row.node.empty() && !row.attempt_hosts.empty()) row.node = row.attempt_hosts.back();
  row.attempts = std::max(row.attempts, static_cast<int>(row.attempt_hosts.size()));
  return row;
}

// The results file is the final word on how a job ended.
void settle_with_results(JobStatusRow& row) {
  const run::JobOutcome disk = run::outcome_from_results(row.disk);
  if (run::is_finished(disk))
    row.state = disk;
  else if (disk == run::JobOutcome::Failed && !run::is_queued(row.state))
    row.state = run::JobOutcome::Failed;
  else if (!row.slurm_state.empty() && row.state == run::JobOutcome::Completed)
    row.state = disk == run::JobOutcome::Interrupted ? run::JobOutcome::Interrupted : run::JobOutcome::Failed;
}

}  // namespace

RunStatus run_status(const run::RunDir& dir, const StatusOverlay& overlay) {
  const std::string& root = dir.root();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw std::invalid_argument("RUN_DIR: '" + root + "' is not a directory");
  if (!fs::exists(dir.state_file(), ec) && !fs::exists(dir.jobs_dir(), ec))
    throw std::invalid_argument("RUN_DIR: '" + root +
                                "' has no state.json and no jobs/ (not a run directory)");
  RunStatus st;
  st.run_dir = root;
  st.damaged = damaged_files(root);
  run::RunState state;
  try {
    state = dir.load_state();
  } catch (const std::exception& e) {
    // Read-only here: the next `gridrun run` quarantines it; states come from the results files.
    st.damaged.push_back(fs::path(dir.state_file()).filename().string() + " (" +
                         base::printable_line(e.what()) + ")");
  }
  st.name = state.name.empty() ? fs::path(root).filename().string() : state.name;
  // Jobs known from state.json and from job files (a crashed submit may have written only those).
  std::map<std::string, run::JobRecord> recs = state.jobs;
  for (const auto& e : fs::directory_iterator(dir.jobs_dir(), ec)) {
    if (e.path().extension() != ".json") continue;
    const std::string id = e.path().stem().string();
    if (!recs.count(id)) recs[id].id = id;
  }
  const std::map<std::string, DiskGlance> disk = glance_results(dir);
  for (const auto& [id, r] : recs) {
    auto it = disk.find(id);
    st.jobs.push_back(row_from_record(r, it == disk.end() ? nullptr : &it->second));
  }
  if (overlay) overlay(st, recs);
  for (auto& row : st.jobs) {
    settle_with_results(row);
    st.counts[row.state] += 1;
    if (row.state == run::JobOutcome::Failed) {
      auto it = disk.find(row.id);
      row.reason = run::failure_reason(dir, row.id, it == disk.end() ? "" : it->second.exit_reason);
    }
  }
  return st;
}

namespace {

void print_json(const RunStatus& st, std::ostream& os) {
  base::Json counts = base::Json::object();
  for (const auto& [s, n] : st.counts) counts[to_string(s)] = n;
  base::Json jobs = base::Json::array();
  for (const auto& r : st.jobs)
    jobs.push_back({{"id", r.id},
                    {"state", to_string(r.state)},
                    {"slurm_id", r.slurm_id},
                    {"slurm_state", r.slurm_state},
                    {"exit_code", r.exit_code},
                    {"elapsed", r.elapsed},
                    {"node", r.node},
                    {"restarts", r.restarts},
                    {"attempts", r.attempts},
                    {"attempt_hosts", r.attempt_hosts},
                    {"results", r.disk},
                    {"reason", r.reason}});
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

// Table and CSV go through the shared table writer (base/table.hpp), one job per line.
// For people (`for_people`): an empty word or no exit code shows as "-", and a run no Slurm job
// belongs to (`gridrun run`) leaves out the two Slurm columns, so node and results fit. For
// programs (CSV): every column, empty fields empty, exit code -1 for "none".
base::Table jobs_table(const RunStatus& st, bool for_people) {
  using base::number_cell;
  using base::text_cell;
  const bool slurm = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(), [](const JobStatusRow& r) {
    return !r.slurm_id.empty() || !r.slurm_state.empty();
  });
  auto word = [&](const std::string& s) { return text_cell(for_people && s.empty() ? "-" : s); };
  auto count = [](double v) { return number_cell(v, 0); };
  base::Table t;
  t.title = "Jobs";
  t.columns = {"id", "state"};
  if (slurm) t.columns.insert(t.columns.end(), {"slurm_id", "slurm_state"});
  t.columns.insert(t.columns.end(), {"exit_code", "elapsed", "node", "restarts", "attempts", "results"});
  // Where each attempt ran: always for programs; for people only when some job moved.
  const bool moved = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(), [](const JobStatusRow& r) {
    return r.attempt_hosts.size() > 1;
  });
  if (moved) t.columns.push_back("attempt_hosts");
  // Why failed jobs failed: always for programs; for people when a job failed, last and cut to the
  // width the other columns leave (print_table), so that one job stays one line.
  const bool failed = !for_people || std::any_of(st.jobs.begin(), st.jobs.end(),
                                                 [](const JobStatusRow& r) { return !r.reason.empty(); });
  if (failed) {
    t.columns.push_back("reason");
    t.shrink_column = t.columns.size() - 1;
    t.shrink_min = 30;
  }
  for (const auto& r : st.jobs) {
    std::vector<base::Cell> row = {text_cell(r.id), text_cell(to_string(r.state))};
    if (slurm) row.insert(row.end(), {word(r.slurm_id), word(r.slurm_state)});
    const bool no_exit = for_people && r.exit_code < 0;
    row.insert(row.end(), {count(no_exit ? std::nan("") : r.exit_code), word(r.elapsed), word(r.node),
                           count(r.restarts), count(r.attempts), word(r.disk)});
    if (moved) {
      std::string hosts;
      for (const auto& h : r.attempt_hosts) hosts += (hosts.empty() ? "" : " > ") + h;
      row.push_back(word(hosts));
    }
    if (failed) row.push_back(word(r.reason));
    t.rows.push_back(std::move(row));
  }
  // Too wide for the terminal (long node or results words): Slurm's own words go first.
  for (const char* name : {"slurm_state", "node", "results", "elapsed"}) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it != t.columns.end()) t.drop_order.push_back(static_cast<std::size_t>(it - t.columns.begin()));
  }
  return t;
}

void print_csv(const RunStatus& st, std::ostream& os) {
  base::TableStyle style;
  style.format = "csv";
  style.heading = false;
  base::render_tables({jobs_table(st, /*for_people=*/false)}, style, os);
}

void print_table(const RunStatus& st, int width, std::ostream& os) {
  os << "run " << st.name << " (" << st.run_dir << "): " << st.jobs.size() << " jobs";
  for (const auto& [s, n] : st.counts) os << ", " << n << " " << to_string(s);
  os << "\n";
  if (st.slurm_queried && !st.slurm_answered)
    os << "note: Slurm did not answer; states come from state.json and results files\n";
  for (const auto& d : st.damaged) os << "damaged (quarantined, not used): " << d << "\n";
  if (!st.collect_ids.empty())
    os << "collect job " << st.collect_ids.back() << ": " << st.collect_state
       << (fs::exists(run::RunDir(st.run_dir).index_file()) ? "; results.h5 present" : "; no results.h5 yet")
       << "\n";
  base::TableStyle style;
  style.fit = base::TableStyle::Fit::Drop;
  style.heading = false;
  style.width = width;
  base::render_tables({jobs_table(st, /*for_people=*/true)}, style, os);
}

}  // namespace

void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os, int width) {
  switch (fmt) {
    case StatusFormat::Json: return print_json(st, os);
    case StatusFormat::Csv: return print_csv(st, os);
    case StatusFormat::Table: return print_table(st, width, os);
  }
}

}  // namespace gridrun::scheduler
