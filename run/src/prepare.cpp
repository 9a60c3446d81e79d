// prepare_run and quarantine_damaged (prepare.hpp).
#include "gridrun/run/prepare.hpp"

#include <algorithm>

#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"

namespace fs = std::filesystem;

namespace gridrun::run {

void quarantine_damaged(const std::string& path, const std::string& why, std::ostream& log) {
  const std::string to = base::quarantine(path);
  const std::string cause = base::printable_line(why);
  if (to.empty()) throw std::runtime_error(path + ": damaged (" + cause + ") and cannot be moved aside");
  log << "warning: " << path << " is damaged (" << cause << "); moved to " << to << "\n" << std::flush;
}

std::vector<std::string> override_texts(const std::vector<std::pair<std::string, jobs::Value>>& overrides) {
  std::vector<std::string> out;
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + jobs::to_string(v));
  return out;
}

std::string selection_flags(const std::vector<std::pair<std::string, jobs::Value>>& overrides,
                            const std::vector<jobs::Selector>& only) {
  std::string flags;
  for (const auto& o : override_texts(overrides)) flags += " --set " + o;
  for (const auto& s : only) flags += " --only " + s.text;
  return flags;
}

std::string phase_of(const jobs::Expansion& ex, std::size_t i) {
  if (ex.compare_by.empty()) return "";
  if (!jobs::find_param(ex.compare_by)) return "";
  const jobs::JobParams& p = ex.jobs.at(i).params;
  const std::string value = jobs::to_string(jobs::get_param(p, ex.compare_by));
  return p.repeat > 0 ? value + "#" + std::to_string(p.repeat + 1) : value;
}

PhaseKey split_phase(const std::string& phase) {
  const auto hash = phase.rfind('#');
  if (hash == std::string::npos || hash + 1 >= phase.size() || phase.size() - hash > 4) return {phase, 0};
  int n = 0;
  for (std::size_t k = hash + 1; k < phase.size(); ++k) {
    if (phase[k] < '0' || phase[k] > '9') return {phase, 0};
    n = 10 * n + (phase[k] - '0');
  }
  if (n < 2) return {phase, 0};
  return {phase.substr(0, hash), n - 1};
}

std::string phase_label(const std::string& compare_by, const std::string& phase) {
  const PhaseKey k = split_phase(phase);
  const std::string base = compare_by.empty() ? k.value : compare_by + "=" + k.value;
  return k.repeat > 0 ? base + " #" + std::to_string(k.repeat + 1) : base;
}

std::string arrangement_text(const std::vector<const jobs::JobParams*>& jobs, bool side_by_side) {
  std::int64_t r_lo = 0, r_hi = 0, t_lo = 0, t_hi = 0;
  bool gpu = false;
  for (const jobs::JobParams* p : jobs) {
    if (!p) continue;
    const std::int64_t r = std::max<std::int64_t>(p->ranks, 1);
    const std::int64_t t = std::max<std::int64_t>(p->threads_per_rank, 1);
    gpu = gpu || p->device == jobs::Device::gpu;
    r_lo = r_lo ? std::min(r_lo, r) : r, r_hi = std::max(r_hi, r);
    t_lo = t_lo ? std::min(t_lo, t) : t, t_hi = std::max(t_hi, t);
  }
  const std::size_t n = jobs.size();
  auto range = [](std::int64_t lo, std::int64_t hi, const char* one, const char* many) {
    return (lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi)) + " " +
           (lo == hi && lo == 1 ? one : many);
  };
  std::string s = std::to_string(n) + (n == 1 ? " job" : " jobs");
  if (r_hi > 0) {
    s += " x " + range(r_lo, r_hi, gpu ? "GPU rank" : "rank", gpu ? "GPU ranks" : "ranks");
    if (!gpu && (t_hi > 1 || t_lo != t_hi)) s += " x " + range(t_lo, t_hi, "thread", "threads");
  }
  if (n > 1) s += side_by_side ? ", side by side" : ", one after another";
  return s;
}

jobs::Job with_phase(const jobs::Job& job, const std::string& phase) {
  jobs::Job j = job;
  j.meta["phase"] = phase;
  return j;
}

std::vector<JobRecord*> records_of(RunState& s, const std::vector<jobs::Job>& jobs) {
  std::vector<std::string> ids;
  ids.reserve(jobs.size());
  for (const jobs::Job& job : jobs) ids.push_back(job.id);
  return records_of(s, ids);
}

PreparedRun prepare_run(const RunDir& dir, const jobs::Expansion& ex, const PrepareOptions& opts,
                        std::ostream& log) {
  PreparedRun p;
  dir.create_layout();
  if (opts.slurm_dir) fs::create_directories(dir.slurm_dir());
  if (opts.lock) p.lock = std::make_unique<RunLock>(dir);
  const std::string grid = base::read_file(opts.grid_file, base::kinds::kGridFile);
  if (base::try_read_file(dir.grid_copy(), base::kinds::kGridCopy) != grid)
    base::write_file_atomic(dir.grid_copy(), grid);
  try {
    p.state = dir.load_state();
    std::error_code sec;
    if (fs::is_regular_file(dir.state_file(), sec)) p.on_disk = p.state;
  } catch (const std::exception& e) {
    // The results files decide what is finished; state.json only adds attempts and timings.
    quarantine_damaged(dir.state_file(), e.what(), log);
  }
  for (const std::string& w : p.state.warnings)
    log << "warning: " << base::printable_line(w) << "\n" << std::flush;
  p.state.warnings.clear();
  p.state.name = ex.name;
  p.state.overrides = opts.overrides;
  p.state.repeats = opts.repeats;
  std::error_code aec;
  p.state.grid_dir = fs::absolute(fs::path(opts.grid_file), aec).parent_path().string();
  p.state.grid_file = fs::absolute(fs::path(opts.grid_file), aec).lexically_normal().string();
  const std::vector<JobRecord*> records = records_of(p.state, ex.jobs);
  // The ids whose job file exists, from one listing of jobs/ (not a stat per job).
  std::unordered_set<std::string> present;
  if (auto names = base::list_folder(dir.jobs_dir()))
    for (const std::string& name : *names)
      if (auto id = RunDir::job_id_of_job_file(name)) present.insert(std::move(*id));
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    const std::string& id = ex.jobs[i].id;
    JobRecord& rec = *records[i];
    rec.phase = phase_of(ex, i);
    if (present.count(id) == 0) continue;
    try {
      jobs::read_job_file(dir.job_file(id));
    } catch (const std::exception& e) {
      quarantine_damaged(dir.job_file(id), e.what(), log);
      jobs::write_job_file(dir.job_file(id), with_phase(ex.jobs[i], rec.phase));
    }
  }
  return p;
}

}  // namespace gridrun::run
