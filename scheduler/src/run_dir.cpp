// The run directory: paths, the state file (atomic JSON) and the run lock. See run_dir.hpp.
#include "gridrun/scheduler/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json.hpp"

namespace gridrun::scheduler {

std::string to_string(JobState s) {
  switch (s) {
    case JobState::Pending: return "pending";
    case JobState::Running: return "running";
    case JobState::Completed: return "completed";
    case JobState::Failed: return "failed";
    case JobState::Interrupted: return "interrupted";
    case JobState::TargetReached: return "target_reached";
    case JobState::Submitted: return "submitted";
  }
  return "pending";
}

JobState job_state_from_string(const std::string& s) {
  for (JobState st : {JobState::Pending, JobState::Running, JobState::Completed, JobState::Failed,
                      JobState::Interrupted, JobState::TargetReached, JobState::Submitted})
    if (to_string(st) == s) return st;
  throw std::invalid_argument("unknown job state '" + s + "'");
}

RunDir::RunDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}
std::string RunDir::job_file(const std::string& id) const { return root_ + "/jobs/" + id + ".json"; }
std::string RunDir::rankfile(const std::string& id) const { return root_ + "/jobs/" + id + ".rankfile"; }
std::string RunDir::log_out(const std::string& id) const { return root_ + "/logs/" + id + ".out"; }
std::string RunDir::log_err(const std::string& id) const { return root_ + "/logs/" + id + ".err"; }
std::string RunDir::results_dir() const { return root_ + "/results"; }
std::string RunDir::result_file(const std::string& id) const { return root_ + "/results/" + id + ".h5"; }
std::string RunDir::checkpoint_dir(const std::string& id) const { return root_ + "/checkpoints/" + id; }
std::string RunDir::slurm_dir() const { return root_ + "/slurm"; }
std::string RunDir::state_file() const { return root_ + "/state.json"; }
std::string RunDir::index_file() const { return root_ + "/results.h5"; }
std::string RunDir::grid_copy() const { return root_ + "/grid.yaml"; }
std::string RunDir::lock_file() const { return root_ + "/lock"; }

namespace {
void mkdir_p(const std::string& path) {
  std::string cur;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0777) != 0 && errno != EEXIST)
      throw std::runtime_error(cur + ": cannot create directory: " + std::strerror(errno));
  }
}

std::string read_all(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}
}  // namespace

void RunDir::create_layout() const {
  for (const char* sub : {"", "/jobs", "/logs", "/results", "/checkpoints"}) mkdir_p(root_ + sub);
}

RunState RunDir::load_state() const {
  RunState st;
  bool exists = false;
  const std::string text = read_all(state_file(), &exists);
  if (!exists) return st;
  const json::Value root = json::parse(text, state_file());
  st.name = root.get_string("name");
  if (const json::Value* jobs = root.get("jobs"); jobs && jobs->kind == json::Value::Kind::Object) {
    for (const auto& kv : jobs->obj) {
      const json::Value& j = kv.second;
      JobRecord r;
      r.id = kv.first;
      try {
        r.state = job_state_from_string(j.get_string("state", "pending"));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(state_file() + ": job " + kv.first + ": " + e.what());
      }
      r.attempts = static_cast<int>(j.get_number("attempts"));
      if (const json::Value* ec = j.get("exit_codes"))
        for (const auto& e : ec->arr) r.exit_codes.push_back(static_cast<int>(e.num));
      r.start_unix = j.get_number("start_unix");
      r.end_unix = j.get_number("end_unix");
      r.cores = j.get_string("cores");
      r.gpus = j.get_string("gpus");
      r.host = j.get_string("host");
      r.phase = j.get_string("phase");
      r.slurm_job_id = j.get_string("slurm_job_id");
      st.jobs.emplace(r.id, std::move(r));
    }
  }
  if (const json::Value* ph = root.get("phases"); ph && ph->kind == json::Value::Kind::Object)
    for (const auto& kv : ph->obj) st.phases_json[kv.first] = json::dump(kv.second);
  return st;
}

void RunDir::save_state(const RunState& s) const {
  json::Value root = json::Value::object();
  root.set("name", json::Value::string(s.name));
  json::Value jobs = json::Value::object();
  for (const auto& kv : s.jobs) {
    const JobRecord& r = kv.second;
    json::Value j = json::Value::object();
    j.set("state", json::Value::string(to_string(r.state)));
    j.set("attempts", json::Value::number(r.attempts));
    json::Value ec = json::Value::array();
    for (int e : r.exit_codes) ec.arr.push_back(json::Value::number(e));
    j.set("exit_codes", std::move(ec));
    j.set("start_unix", json::Value::number(r.start_unix));
    j.set("end_unix", json::Value::number(r.end_unix));
    j.set("cores", json::Value::string(r.cores));
    j.set("gpus", json::Value::string(r.gpus));
    j.set("host", json::Value::string(r.host));
    j.set("phase", json::Value::string(r.phase));
    j.set("slurm_job_id", json::Value::string(r.slurm_job_id));
    jobs.set(kv.first, std::move(j));
  }
  root.set("jobs", std::move(jobs));
  json::Value phases = json::Value::object();
  for (const auto& kv : s.phases_json) phases.set(kv.first, json::parse(kv.second, "phase " + kv.first));
  root.set("phases", std::move(phases));

  // Temp file + fsync + rename: a reader (or the next gridrun after a crash) sees the old or the
  // new state, never half of one.
  const std::string tmp = state_file() + ".tmp." + std::to_string(::getpid());
  const std::string text = json::dump(root, true) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(tmp + ": cannot write state: " + std::strerror(errno));
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(tmp + ": cannot write state: " + std::strerror(err));
    }
    off += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), state_file().c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(state_file() + ": cannot replace state: " + std::strerror(err));
  }
}

RunLock::RunLock(const RunDir& dir) {
  const std::string path = dir.lock_file();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open lock file: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[64] = {0};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw std::runtime_error(path + ": cannot lock: " + std::strerror(err));
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    throw RunLocked(dir.root() + " is in use by another gridrun (PID " + std::to_string(pid) +
                        " holds " + path + "); wait for it or stop it first",
                    pid);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(path + ": cannot write PID: " + std::strerror(errno));
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) {
    (void)::ftruncate(fd_, 0);
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace gridrun::scheduler
