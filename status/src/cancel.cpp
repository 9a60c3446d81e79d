// `gridrun cancel` of a local run: signal the lock's holder, wait for it. See cancel.hpp.
#include "gridrun/status/cancel.hpp"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"

namespace fs = std::filesystem;

namespace gridrun::status {

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
  const std::string raw =
      base::try_read_file("/proc/" + std::to_string(pid) + "/cmdline", base::kinds::kProcFile).value_or("");
  std::string out;
  for (std::size_t pos = 0; pos < raw.size();) {
    std::size_t end = raw.find('\0', pos);
    if (end == std::string::npos) end = raw.size();
    out += (out.empty() ? "" : " ") + base::shell_quote(raw.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Why the process `h` names is not the verified holder of `dir`'s lock, "" when it is. On "", `pinned`
// holds it, pinned before the checks (so they were made on that process and no later one with its
// PID). The record is a file anyone who can write the run directory can forge, and a name is no
// proof: the kernel's own view decides. The lock must be held (lock_holder's probe), the PID's start
// must be the one recorded with it (a reused PID has a later one), and the process must hold the
// lock itself, an exclusive flock through an open file of the lock file (/proc/PID/fdinfo), which
// no other process can fake.
std::string unverified_because(const run::RunDir& dir, const run::LockHolder& h,
                               std::optional<base::PinnedProcess>& pinned) {
  const std::string who = "PID " + std::to_string(h.pid);
  if (h.pid <= 0 || h.pid > std::numeric_limits<int>::max()) return "it names no PID";
  if (h.host.empty() || h.start_ticks == 0)
    return "it records no host or start time (written by an older gridrun, or not by gridrun)";
  const int pid = static_cast<int>(h.pid);
  pinned = base::PinnedProcess::open(pid);
  if (!pinned) return who + " does not exist here (another PID namespace?)";
  if (base::start_ticks(pid) != h.start_ticks)
    return who + " started at another time than recorded: another process that was given the PID";
  if (const std::string comm = base::comm_of(pid); comm.rfind("gridrun", 0) != 0)
    return who + " is " + (comm.empty() ? std::string("gone") : "'" + comm + "'") + ", not a gridrun";
  if (!base::holds_flock(pid, dir.lock_file()))
    return who +
           " does not hold the lock itself (another process holds it, or its open files "
           "cannot be read: another user's)";
  return "";
}

}  // namespace

LocalCancelResult cancel_local_run(const run::RunDir& dir, const LocalCancelOptions& opts) {
  LocalCancelResult res;
  const auto holder = run::lock_holder(dir);
  if (!holder) return res;
  res.pid = holder->pid;
  res.host = holder->host;
  // A PID is only meaningful on the holder's host (and in its PID namespace).
  if (!res.host.empty() && res.host != base::hostname()) {
    res.outcome = LocalCancelResult::Outcome::Elsewhere;
    return res;
  }
  std::optional<base::PinnedProcess> proc;
  res.why = unverified_because(dir, *holder, proc);
  if (!res.why.empty()) {
    res.outcome = LocalCancelResult::Outcome::Unverified;
    return res;
  }
  res.command = command_line(res.pid);
  std::error_code ec;
  res.cwd = fs::read_symlink("/proc/" + std::to_string(res.pid) + "/cwd", ec).string();
  res.running = jobs_in_state(dir, run::JobOutcome::Running);
  // Through the pidfd: the process checked above or nothing (false: it ended meanwhile, stopped).
  proc->signal(SIGTERM);
  // The holder lets go of the lock when it is done, after its jobs checkpointed and state.json was
  // written; then it exits. Its pidfd says when (poll: no sleeping loop).
  if (!proc->wait_exit(opts.timeout_s)) {
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
      os << "gridrun cancel: " << dir.root() << " is held by " << who << " on " << res.host
         << "; run gridrun cancel there\n";
      return;
    case O::Unverified:
      os << "gridrun cancel: refused: " << dir.lock_file() << " is locked, but the process it names is not "
         << "the gridrun holding it: " << res.why << "; signalled nothing\n";
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

}  // namespace gridrun::status
