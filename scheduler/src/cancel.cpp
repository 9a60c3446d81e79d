// `gridrun cancel` of a local run: signal the lock's holder, wait for it. See cancel.hpp.
#include "gridrun/scheduler/cancel.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

// The ids state.json records in `state`; an unreadable state.json gives none (the holder
// rewrites it as it stops).
std::vector<std::string> jobs_in_state(const run::RunDir& dir, run::JobOutcome state) {
  std::vector<std::string> out;
  try {
    for (const auto& [id, r] : dir.load_state().jobs)
      if (r.state == state) out.push_back(id);
  } catch (const std::exception&) {
  }
  return out;
}

// argv of a process as one shell line ("" when it is gone).
std::string command_line(long pid) {
  const std::string raw = base::try_read_file("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  std::string out;
  for (std::size_t pos = 0; pos < raw.size();) {
    std::size_t end = raw.find('\0', pos);
    if (end == std::string::npos) end = raw.size();
    out += (out.empty() ? "" : " ") + base::shell_quote(raw.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Whether `pid` still runs: not gone and not a zombie (exited, its parent has not reaped it yet).
bool process_runs(long pid) {
  const auto stat = base::try_read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  const auto paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] != 'Z';
}

// Whether the holder has not finished stopping: it holds the lock still (a new holder after it is
// another run: ours stopped), or it let go but has not exited yet.
bool still_running(const run::RunDir& dir, long pid) {
  const auto h = run::lock_holder(dir);
  if (h && h->pid == pid) return true;
  return process_runs(pid) && base::comm_of(static_cast<int>(pid)).rfind("gridrun", 0) == 0;
}

}  // namespace

LocalCancelResult cancel_local_run(const run::RunDir& dir, const LocalCancelOptions& opts) {
  LocalCancelResult res;
  const auto holder = run::lock_holder(dir);
  if (!holder) return res;
  res.pid = holder->pid;
  res.host = holder->host;
  // A PID is only meaningful on the holder's host (and in its PID namespace): a lock naming
  // another host, or a PID that is not a gridrun here (no host recorded: an older gridrun, or a
  // PID namespace we do not share), is not ours to signal.
  const bool other_host = !res.host.empty() && res.host != base::hostname();
  if (other_host || res.pid <= 0 || base::comm_of(static_cast<int>(res.pid)).rfind("gridrun", 0) != 0) {
    res.outcome = LocalCancelResult::Outcome::Elsewhere;
    return res;
  }
  res.command = command_line(res.pid);
  std::error_code ec;
  res.cwd = fs::read_symlink("/proc/" + std::to_string(res.pid) + "/cwd", ec).string();
  res.running = jobs_in_state(dir, run::JobOutcome::Running);
  if (::kill(static_cast<pid_t>(res.pid), SIGTERM) != 0 && errno != ESRCH)
    throw std::runtime_error("cannot signal gridrun PID " + std::to_string(res.pid) + " holding " +
                             dir.root() + ": " + base::errno_text(errno));
  // The holder lets go of the lock when it is done (the kernel drops a dead process's flock even
  // before its parent reaps it), after its jobs checkpointed and state.json was written; then it
  // exits.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(opts.timeout_s);
  const auto poll = std::chrono::duration<double>(opts.poll_s);
  bool held = still_running(dir, res.pid);
  while (held && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(poll);
    held = still_running(dir, res.pid);
  }
  if (held) {
    res.outcome = LocalCancelResult::Outcome::TimedOut;
    return res;
  }
  res.outcome = LocalCancelResult::Outcome::Stopped;
  const auto now_interrupted = jobs_in_state(dir, run::JobOutcome::Interrupted);
  for (const auto& id : res.running)
    if (std::find(now_interrupted.begin(), now_interrupted.end(), id) != now_interrupted.end())
      res.interrupted.push_back(id);
  return res;
}

void print_local_cancel(const run::RunDir& dir, const LocalCancelResult& res, const LocalCancelOptions& opts,
                        std::ostream& os) {
  using O = LocalCancelResult::Outcome;
  const std::string who = "gridrun PID " + std::to_string(res.pid);
  switch (res.outcome) {
    case O::NotRunning: os << "gridrun cancel: nothing is running in " << dir.root() << "\n"; return;
    case O::Elsewhere:
      os << "gridrun cancel: " << dir.root() << " is held by " << who
         << (res.host.empty() ? " (not a gridrun process of this host)" : " on " + res.host)
         << "; run gridrun cancel there\n";
      return;
    case O::TimedOut:
      os << "gridrun cancel: asked " << who << " to stop " << dir.root() << ", but it still runs after "
         << base::format_duration(opts.timeout_s)
         << " (its jobs may still be checkpointing); wait longer with "
         << "gridrun cancel " << base::shell_quote(dir.root()) << " --timeout SECONDS, or kill its jobs with "
         << "kill -TERM " << res.pid << " twice\n";
      return;
    case O::Stopped: break;
  }
  os << "gridrun cancel: stopped run " << dir.root() << " (" << who << "): " << res.interrupted.size()
     << " job" << (res.interrupted.size() == 1 ? "" : "s") << " interrupted";
  if (!res.command.empty()) {
    os << " (resumable with: " << res.command;
    std::error_code ec;
    if (!res.cwd.empty() && !fs::equivalent(res.cwd, fs::current_path(ec), ec)) os << ", run in " << res.cwd;
    os << ")";
  }
  os << "\n";
  for (const auto& id : res.interrupted) os << "  interrupted " << id << "\n";
}

}  // namespace gridrun::scheduler
