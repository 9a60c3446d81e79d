// The run directory: paths, the state file (JSON through gridrun::base, written atomically), the
// run lock and prepare_run. See run_dir.hpp.
#include "gridrun/scheduler/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {
constexpr JobOutcome kAllOutcomes[] = {
    JobOutcome::Pending,     JobOutcome::Running,       JobOutcome::Completed, JobOutcome::Failed,
    JobOutcome::Interrupted, JobOutcome::TargetReached, JobOutcome::Submitted};
}  // namespace

std::string to_string(JobOutcome s) {
  switch (s) {
    case JobOutcome::Pending: return "pending";
    case JobOutcome::Running: return "running";
    case JobOutcome::Completed: return "completed";
    case JobOutcome::Failed: return "failed";
    case JobOutcome::Interrupted: return "interrupted";
    case JobOutcome::TargetReached: return "target_reached";
    case JobOutcome::Submitted: return "submitted";
  }
  return "pending";
}

JobOutcome job_outcome_from_string(const std::string& s) {
  for (JobOutcome st : kAllOutcomes)
    if (to_string(st) == s) return st;
  throw std::invalid_argument("unknown job state '" + s + "'");
}

JobOutcome outcome_from_results(const std::string& status) {
  for (JobOutcome st : {JobOutcome::Completed, JobOutcome::TargetReached, JobOutcome::Failed,
                        JobOutcome::Interrupted, JobOutcome::Running})
    if (to_string(st) == status) return st;
  return JobOutcome::Pending;
}

bool is_finished(JobOutcome s) { return s == JobOutcome::Completed || s == JobOutcome::TargetReached; }
bool is_queued(JobOutcome s) { return s == JobOutcome::Submitted || s == JobOutcome::Running; }

RunDir::RunDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}
std::string RunDir::jobs_dir() const { return root_ + "/jobs"; }
std::string RunDir::job_file(const std::string& id) const { return jobs_dir() + "/" + id + ".json"; }
std::string RunDir::rankfile(const std::string& id) const { return jobs_dir() + "/" + id + ".rankfile"; }
std::string RunDir::logs_dir() const { return root_ + "/logs"; }
std::string RunDir::log_out(const std::string& id) const { return logs_dir() + "/" + id + ".out"; }
std::string RunDir::log_err(const std::string& id) const { return logs_dir() + "/" + id + ".err"; }
std::string RunDir::heartbeat_file(const std::string& id) const { return log_out(id) + ".heartbeat"; }
std::string RunDir::results_dir() const { return root_ + "/results"; }
std::string RunDir::result_file(const std::string& id) const { return results_dir() + "/" + id + ".h5"; }
std::string RunDir::partial_file(const std::string& id) const { return result_file(id) + ".partial"; }
std::string RunDir::checkpoints_dir() const { return root_ + "/checkpoints"; }
std::string RunDir::checkpoint_dir(const std::string& id) const { return checkpoints_dir() + "/" + id; }
std::string RunDir::slurm_dir() const { return root_ + "/slurm"; }
std::string RunDir::slurm_file(const std::string& name) const { return slurm_dir() + "/" + name; }
std::string RunDir::slurm_ended_dir() const { return slurm_file("ended"); }
std::string RunDir::submitted_file() const { return slurm_file("submitted.tsv"); }
std::string RunDir::state_file() const { return root_ + "/state.json"; }
std::string RunDir::index_file() const { return root_ + "/results.h5"; }
std::string RunDir::grid_copy() const { return root_ + "/grid.yaml"; }
std::string RunDir::lock_file() const { return root_ + "/lock"; }

void RunDir::create_layout() const {
  for (const std::string& d : {root_, jobs_dir(), logs_dir(), results_dir(), checkpoints_dir()}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw std::runtime_error(d + ": cannot create directory: " + ec.message());
  }
}

RunState RunDir::load_state() const {
  RunState st;
  const auto text = base::try_read_file(state_file());
  if (!text) return st;
  const base::Json root = base::parse_json(*text, state_file());
  st.name = base::get_string(root, "name");
  if (const auto jobs = root.find("jobs"); jobs != root.end() && jobs->is_object()) {
    for (const auto& [id, j] : jobs->items()) {
      JobRecord r;
      r.id = id;
      try {
        r.state = job_outcome_from_string(base::get_string(j, "state", "pending"));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(state_file() + ": job " + id + ": " + e.what());
      }
      r.attempts = static_cast<int>(std::clamp(base::get_int(j, "attempts"), 0LL, 1LL << 30));
      // Exit codes are small integers; anything else in a damaged file is skipped (a float
      // beyond int's range cast to int is undefined behaviour; found by fuzzing, issue 24).
      if (const auto ec = j.find("exit_codes"); ec != j.end() && ec->is_array())
        for (const auto& e : *ec)
          if (e.is_number_integer() && e.get<double>() >= -2147483648.0 && e.get<double>() <= 2147483647.0)
            r.exit_codes.push_back(static_cast<int>(e.get<long long>()));
      r.start_unix = base::get_number(j, "start_unix");
      r.end_unix = base::get_number(j, "end_unix");
      r.cores = base::get_string(j, "cores");
      r.gpus = base::get_string(j, "gpus");
      r.host = base::get_string(j, "host");
      r.phase = base::get_string(j, "phase");
      r.slurm_job_id = base::get_string(j, "slurm_job_id");
      st.jobs.emplace(r.id, std::move(r));
    }
  }
  if (const auto ph = root.find("phases"); ph != root.end() && ph->is_object())
    for (const auto& [value, fig] : ph->items()) st.phases[value] = results::phase_from_json(value, fig);
  return st;
}

void RunDir::save_state(const RunState& s) const {
  base::Json jobs = base::Json::object();
  for (const auto& [id, r] : s.jobs) {
    base::append_new_member(jobs, id,
                            {{"state", to_string(r.state)},
                             {"attempts", r.attempts},
                             {"exit_codes", r.exit_codes},
                             {"start_unix", r.start_unix},
                             {"end_unix", r.end_unix},
                             {"cores", r.cores},
                             {"gpus", r.gpus},
                             {"host", r.host},
                             {"phase", r.phase},
                             {"slurm_job_id", r.slurm_job_id}});
  }
  base::Json phases = base::Json::object();
  for (const auto& [value, p] : s.phases) phases[value] = results::phase_to_json(p);
  const base::Json root = {{"name", s.name}, {"jobs", std::move(jobs)}, {"phases", std::move(phases)}};
  // A reader (or the next gridrun after a crash) sees the old or the new state, never half of one.
  base::write_file_atomic(state_file(),
                          root.dump(2, ' ', false, base::Json::error_handler_t::replace) + "\n");
}

RunLock::RunLock(const RunDir& dir) {
  const std::string path = dir.lock_file();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open lock file: " + base::errno_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[64] = {0};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw std::runtime_error(path + ": cannot lock: " + base::errno_text(err));
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    throw RunLocked(dir.root() + " is in use by another gridrun (PID " + std::to_string(pid) + " holds " +
                        path + "); wait for it or stop it first",
                    pid);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(path + ": cannot write PID: " + base::errno_text(errno));
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    (void)::ftruncate(fd_, 0);
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

void quarantine_damaged(const std::string& path, const std::string& why, std::ostream& log) {
  const std::string to = base::quarantine(path);
  const std::string cause = base::printable_line(why);
  if (to.empty()) throw std::runtime_error(path + ": damaged (" + cause + ") and cannot be moved aside");
  log << "warning: " << path << " is damaged (" << cause << "); moved to " << to << "\n" << std::flush;
}

std::string phase_of(const jobs::Expansion& ex, std::size_t i) {
  if (ex.compare_by.empty()) return "";
  if (!jobs::find_param(ex.compare_by)) return "";
  return jobs::to_string(jobs::get_param(ex.jobs.at(i).params, ex.compare_by));
}

jobs::Job with_phase(const jobs::Job& job, const std::string& phase) {
  jobs::Job j = job;
  j.meta["phase"] = phase;
  return j;
}

PreparedRun prepare_run(const RunDir& dir, const jobs::Expansion& ex, const PrepareOptions& opts,
                        std::ostream& log) {
  PreparedRun p;
  dir.create_layout();
  if (opts.slurm_dir) fs::create_directories(dir.slurm_dir());
  if (opts.lock) p.lock = std::make_unique<RunLock>(dir);
  const std::string grid = base::read_file(opts.grid_file);
  if (base::try_read_file(dir.grid_copy()) != grid) base::write_file_atomic(dir.grid_copy(), grid);
  try {
    p.state = dir.load_state();
  } catch (const std::exception& e) {
    // The results files decide what is finished; state.json only adds attempts and timings.
    quarantine_damaged(dir.state_file(), e.what(), log);
  }
  p.state.name = ex.name;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    const std::string& id = ex.jobs[i].id;
    JobRecord& rec = p.state.jobs[id];
    rec.id = id;
    rec.phase = phase_of(ex, i);
    std::error_code ec;
    if (!fs::exists(dir.job_file(id), ec)) continue;
    try {
      jobs::read_job_file(dir.job_file(id));
    } catch (const std::exception& e) {
      quarantine_damaged(dir.job_file(id), e.what(), log);
      jobs::write_job_file(dir.job_file(id), with_phase(ex.jobs[i], rec.phase));
    }
  }
  return p;
}

}  // namespace gridrun::scheduler
