// The run directory: paths, the state file (JSON through gridrun::base, written atomically) and
// the run lock. See run_dir.hpp.
#include "gridrun/run/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/json_checked.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/job.hpp"

namespace fs = std::filesystem;

namespace gridrun::run {

namespace {

// The suffixes of a job's files: spelled here only, in both directions (the names below and their
// inverses, RunDir::job_id_of_*).
constexpr std::string_view kJobFileSuffix = ".json";
constexpr std::string_view kRankfileSuffix = ".rankfile";
constexpr std::string_view kLogOutSuffix = ".out";
constexpr std::string_view kLogErrSuffix = ".err";
constexpr std::string_view kHeartbeatSuffix = ".heartbeat";
constexpr std::string_view kOthersSuffix = ".others";
constexpr std::string_view kResultSuffix = ".h5";
constexpr std::string_view kPartialSuffix = ".partial";
constexpr std::string_view kProfileTraceSuffix = ".profile.json";

std::string with(const std::string& id, std::string_view suffix) { return id + std::string(suffix); }

// The id of the file `name` (its last component when it is a path) that ends in `suffix`; nullopt
// for another name or an empty id.
std::optional<std::string> id_before(const std::string& name, std::string_view suffix) {
  const std::string file = fs::path(name).filename().string();
  if (file.size() <= suffix.size() || !base::ends_with(file, suffix)) return std::nullopt;
  return file.substr(0, file.size() - suffix.size());
}

}  // namespace

RunDir::RunDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}
RunDir RunDir::for_grid(const std::string& out_dir, const std::string& grid_name) {
  return RunDir(out_dir + "/" + grid_name);
}
RunDir RunDir::of_results_dir(const std::string& results_dir) {
  // <results>/.. as the OS resolves it (through a symlinked results folder) when the folder exists,
  // lexically when it does not yet (gridrun-train creates it; ".." cannot pass a missing folder).
  std::error_code ec;
  if (fs::is_directory(results_dir, ec)) {
    const fs::path real = fs::canonical(results_dir, ec);
    if (!ec) return RunDir(real.parent_path().string());
  }
  const std::string parent = (fs::path(results_dir) / "..").lexically_normal().string();
  return RunDir(parent.empty() ? std::string(".") : parent);
}
std::string RunDir::jobs_dir() const { return root_ + "/jobs"; }
std::string RunDir::job_file(const std::string& id) const {
  return jobs_dir() + "/" + with(id, kJobFileSuffix);
}
std::string RunDir::rankfile(const std::string& id) const {
  return jobs_dir() + "/" + with(id, kRankfileSuffix);
}
std::string RunDir::logs_dir() const { return root_ + "/logs"; }
std::string RunDir::log_out(const std::string& id) const {
  return logs_dir() + "/" + with(id, kLogOutSuffix);
}
std::string RunDir::log_err(const std::string& id) const {
  return logs_dir() + "/" + with(id, kLogErrSuffix);
}
std::string RunDir::log_file(const std::string& name) const { return logs_dir() + "/" + name; }
std::string RunDir::heartbeat_file(const std::string& id) const {
  return with(log_out(id), kHeartbeatSuffix);
}
std::string RunDir::others_file(const std::string& id) const {
  return logs_dir() + "/" + with(id, kOthersSuffix);
}
std::string RunDir::results_dir() const { return root_ + "/results"; }
std::string RunDir::result_file_name(const std::string& id) { return with(id, kResultSuffix); }
std::string RunDir::partial_file_name(const std::string& id) {
  return with(result_file_name(id), kPartialSuffix);
}
std::string RunDir::profile_trace_name(const std::string& id) { return with(id, kProfileTraceSuffix); }
std::optional<std::string> RunDir::job_id_of_job_file(const std::string& name) {
  return id_before(name, kJobFileSuffix);
}
std::optional<std::string> RunDir::job_id_of_results_file(const std::string& name) {
  if (auto id = id_before(name, with(std::string(kResultSuffix), kPartialSuffix))) return id;
  return id_before(name, kResultSuffix);
}
bool RunDir::is_partial_file(const std::string& name) {
  return id_before(name, with(std::string(kResultSuffix), kPartialSuffix)).has_value();
}
std::string RunDir::result_file(const std::string& id) const {
  return results_dir() + "/" + result_file_name(id);
}
std::string RunDir::partial_file(const std::string& id) const {
  return results_dir() + "/" + partial_file_name(id);
}
std::string RunDir::checkpoints_dir() const { return root_ + "/checkpoints"; }
std::string RunDir::checkpoint_dir(const std::string& id) const { return checkpoints_dir() + "/" + id; }
std::string RunDir::slurm_dir() const { return root_ + "/slurm"; }
std::string RunDir::slurm_file(const std::string& name) const { return slurm_dir() + "/" + name; }
std::string RunDir::slurm_ended_dir() const { return slurm_file("ended"); }
std::string RunDir::submitted_file() const { return slurm_file("submitted.tsv"); }
std::string RunDir::state_file() const { return root_ + "/state.json"; }
std::string RunDir::index_file() const { return root_ + "/results.h5"; }
std::string RunDir::cache_dir() const { return root_ + "/.cache"; }
std::string RunDir::summary_file() const { return cache_dir() + "/summary.json"; }
std::string RunDir::grid_copy() const { return root_ + "/grid.yaml"; }
std::string RunDir::probe_file() const { return root_ + "/probe.json"; }
std::string RunDir::calibration_file() const { return root_ + "/calibration.json"; }
std::string RunDir::prediction_file() const { return root_ + "/prediction.json"; }
std::string RunDir::lock_file() const { return root_ + "/lock"; }
std::string RunDir::launch_token_file() const { return root_ + "/launch-token"; }

void RunDir::create_layout() const {
  for (const std::string& d : {root_, jobs_dir(), logs_dir(), results_dir(), checkpoints_dir()}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw std::runtime_error(d + ": cannot create directory: " + ec.message());
  }
}

namespace {

// state.json's number and text fields of a phase and of a job, by key, in the order they are
// written: save_state and load_state both go through these tables, so each key is named once.
constexpr std::pair<const char*, double PhaseRecord::*> kPhaseNumbers[] = {
    {"start_unix", &PhaseRecord::start_unix},           {"makespan_s", &PhaseRecord::makespan_s},
    {"busy_resource_s", &PhaseRecord::busy_resource_s}, {"capacity", &PhaseRecord::capacity},
    {"max_running", &PhaseRecord::max_running},         {"other_cpu_share", &PhaseRecord::other_cpu_share}};
constexpr std::pair<const char*, double JobRecord::*> kJobNumbers[] = {{"start_unix", &JobRecord::start_unix},
                                                                       {"end_unix", &JobRecord::end_unix}};
constexpr std::pair<const char*, std::string JobRecord::*> kJobTexts[] = {
    {"cores", &JobRecord::cores},
    {"gpus", &JobRecord::gpus},
    {"host", &JobRecord::host},
    {"phase", &JobRecord::phase},
    {"slurm_job_id", &JobRecord::slurm_job_id}};

base::Json phase_to_json(const PhaseRecord& p) {
  base::Json j = base::Json::object();
  for (const auto& [key, field] : kPhaseNumbers) j[key] = p.*field;
  j["sitting"] = p.sitting;
  j["jobs"] = p.jobs;
  return j;
}

// Missing facts are NaN, never an exception (state.json of older versions held figures instead).
PhaseRecord phase_from_json(const std::string& name, const base::Json& v) {
  PhaseRecord p;
  p.name = name;
  if (!v.is_object()) return p;
  for (const auto& [key, field] : kPhaseNumbers) p.*field = base::get_number(v, key, p.*field);
  p.sitting = base::get_string(v, "sitting");
  if (auto jobs = v.find("jobs"); jobs != v.end() && jobs->is_array())
    for (const auto& id : *jobs)
      if (id.is_string()) p.jobs.push_back(id.get<std::string>());
  return p;
}

}  // namespace

RunState RunDir::load_state(bool with_jobs) const {
  RunState st;
  // A FIFO, a link or an oversized file in its place is a damaged state file: named, and quarantined
  // and rebuilt by `gridrun run` like any other (issue 57: a FIFO here blocked every command).
  std::string refused;
  const auto text = base::try_read_file(state_file(), base::kinds::kStateFile, &refused);
  if (!text && !refused.empty()) throw std::runtime_error(refused);
  if (!text) return st;
  base::JsonParseOptions parse;
  if (!with_jobs) parse.skip_members = {"jobs"};
  // Each job's record as the parser completes it, its nodes let go at once (a tree of 100,000
  // records was most of the first adoption's state read, issue 60). Ids come in order (save_state
  // writes a std::map's): each is placed at the end; a repeated id takes its last record.
  parse.stream_member = "jobs";
  parse.on_member = [&](std::string& id, base::Json& j) {
    // An id names the job's files (logs/<id>.out.heartbeat, ...): one that is not a job id
    // ("../../x", a hand edit, checksum or not) is never used (issue 57).
    if (!::gridrun::jobs::is_job_id(id)) {
      st.warnings.push_back(state_file() + ": job id '" + base::printable_line(id) +
                            "' is not a job id (12 lowercase hex digits); skipped");
      return;
    }
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
    for (const auto& [key, field] : kJobNumbers) r.*field = base::get_number(j, key);
    for (const auto& [key, field] : kJobTexts) r.*field = base::get_string(j, key);
    st.jobs.insert_or_assign(st.jobs.end(), std::move(id), std::move(r));
  };
  const base::Json root = base::parse_checked_json(*text, state_file(), nullptr, parse);
  st.name = base::get_string(root, "name");
  st.grid_dir = base::get_string(root, "grid_dir");
  st.grid_file = base::get_string(root, "grid_file");
  {
    const double r = base::get_number(root, "repeats", 0);
    st.repeats = r >= 1 && r <= 1000 ? static_cast<int>(r) : 0;  // else the grid's own
  }
  if (const auto ov = root.find("overrides"); ov != root.end() && ov->is_array())
    for (const auto& o : *ov)
      if (o.is_string()) st.overrides.push_back(o.get<std::string>());
  if (const auto ph = root.find("phases"); ph != root.end() && ph->is_object())
    for (const auto& [value, facts] : ph->items()) st.phases[value] = phase_from_json(value, facts);
  return st;
}

void RunDir::save_state(const RunState& s) const {
  base::Json jobs = base::Json::object();
  for (const auto& [id, r] : s.jobs) {
    base::Json job = {{"state", to_string(r.state)}, {"attempts", r.attempts}, {"exit_codes", r.exit_codes}};
    for (const auto& [key, field] : kJobNumbers) job[key] = r.*field;
    for (const auto& [key, field] : kJobTexts) job[key] = r.*field;
    base::append_new_member(jobs, id, std::move(job));
  }
  base::Json phases = base::Json::object();
  for (const auto& [value, p] : s.phases) phases[value] = phase_to_json(p);
  base::Json root = {{"name", s.name}, {"jobs", std::move(jobs)}, {"phases", std::move(phases)}};
  if (!s.grid_dir.empty()) root["grid_dir"] = s.grid_dir;
  if (!s.grid_file.empty()) root["grid_file"] = s.grid_file;
  if (!s.overrides.empty()) root["overrides"] = s.overrides;
  if (s.repeats > 0) root["repeats"] = s.repeats;
  // A reader (or the next gridrun after a crash) sees the old or the new state, never half of one.
  // With its checksum (base::checked_json_text): a flipped bit is a damaged state.json,
  // quarantined and rebuilt from the job files, never a silently different phase table.
  base::write_file_atomic(state_file(), base::checked_json_text(root, 2));
}

namespace {

constexpr std::size_t kTokenBytes = 16;

bool is_token(const std::string& t) {
  return t.size() == 2 * kTokenBytes && std::all_of(t.begin(), t.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string RunDir::launch_token() const {
  std::string t = base::try_read_file(launch_token_file(), base::kinds::kLaunchToken).value_or("");
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return is_token(t) ? t : std::string();
}

std::string RunDir::renew_launch_token() const {
  std::string t = base::random_hex(kTokenBytes);
  base::write_file_atomic(launch_token_file(), t + "\n", 0600);
  return t;
}

namespace {

// "PID\nHOST\nSTART\n" as RunLock writes it; older gridruns wrote "PID\nHOST\n" or "PID\n".
LockHolder parse_lock_text(const std::string& text) {
  LockHolder h;
  h.pid = std::strtol(text.c_str(), nullptr, 10);
  const auto nl = text.find('\n');
  if (nl != std::string::npos) {
    const auto nl2 = text.find('\n', nl + 1);
    h.host = text.substr(nl + 1, nl2 == std::string::npos ? std::string::npos : nl2 - nl - 1);
    if (nl2 != std::string::npos) h.start_ticks = std::strtoull(text.c_str() + nl2 + 1, nullptr, 10);
  }
  return h;
}

std::string read_fd_text(int fd) {
  char buf[512] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

RunLock::RunLock(const RunDir& dir) {
  const std::string path = dir.lock_file();
  // Never through a link, never a FIFO (base::open_checked): refused, naming the file.
  base::CheckedOpen f = base::open_checked(path, base::kinds::kLockFile, O_RDWR | O_CREAT, 0644);
  if (!f.fd.valid()) throw std::runtime_error(f.message);
  fd_ = f.fd.release();
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const LockHolder h = parse_lock_text(read_fd_text(fd_));
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw std::runtime_error(path + ": cannot lock: " + base::errno_text(err));
    throw RunLocked(dir.root() + " is in use by another gridrun (PID " + std::to_string(h.pid) +
                        (h.host.empty() ? "" : " on " + h.host) + " holds " + path +
                        "); wait for it or stop it first (gridrun cancel " + dir.root() + ")",
                    h.pid);
  }
  const std::string text = std::to_string(::getpid()) + "\n" + base::hostname() + "\n" +
                           std::to_string(base::start_ticks(static_cast<int>(::getpid())).value_or(0)) + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(path + ": cannot write PID: " + base::errno_text(errno));
  }
}

std::optional<LockHolder> lock_holder(const RunDir& dir) {
  // A FIFO in the lock's place blocked `status` and `ls` in open() (issue 57): base::open_checked.
  const base::CheckedOpen f = base::open_checked(dir.lock_file(), base::kinds::kLockFile, O_RDONLY);
  if (!f.fd.valid()) return std::nullopt;
  const int fd = f.fd.get();
  std::optional<LockHolder> out;
  const std::string text = read_fd_text(fd);
  if (!text.empty()) {
    if (::flock(fd, LOCK_SH | LOCK_NB) == 0)
      ::flock(fd, LOCK_UN);  // nobody holds it: the text is a crashed holder's
    else if (errno == EWOULDBLOCK)
      out = parse_lock_text(text);
  }
  return out;
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    (void)::ftruncate(fd_, 0);
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace gridrun::run
