// Slurm client calls and the parsers of their text output; see slurm_cli.hpp.
#include "gridrun/slurm/slurm_cli.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::slurm {
namespace {

using base::split;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  std::string l;
  while (std::getline(is, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

// "0:0" / "1:0" / "0:15" -> exit code, or 128 + signal when killed by a signal; -1 when unknown.
// An exit code is 0-255 and a signal 1-127: anything else is damaged text (a signal near INT_MAX
// overflowed 128 + sig; fuzzing, issue 24).
int parse_exit(const std::string& s) {
  auto p = split(s, ':');
  try {
    const int code = std::stoi(p[0]);
    const int sig = p.size() > 1 ? std::stoi(p[1]) : 0;
    if (code < 0 || code > 255 || sig < 0 || sig > 127) return -1;
    return sig ? 128 + sig : code;
  } catch (...) {
    return -1;
  }
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

[[noreturn]] void fail(const std::vector<std::string>& argv, const base::CapturedRun& r) {
  std::string msg = join(argv, ' ') + ": ";
  std::string err = r.err.empty() ? r.out : r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  msg += err.empty() ? "exit code " + std::to_string(r.exit_code) : err;
  throw std::runtime_error(msg);
}

// The '|'-separated fields of each non-empty line that has at least `min_fields` of them.
std::vector<std::vector<std::string>> pipe_records(const std::string& text, std::size_t min_fields) {
  std::vector<std::vector<std::string>> out;
  for (const auto& l : lines(text)) {
    auto f = split(l, '|');
    if (f.size() >= min_fields) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

namespace {
constexpr int kMaxSlurmTaskId = 4'000'000;
// gridrun never submits an array of more tasks (slurm::kMaxArrayTasks); a record of a larger range
// is another tool's job or damaged text, skipped instead of expanded into millions of entries (a
// 2,147,483-task range held the sacct parser for seconds: found by fuzzing, issue 24).
constexpr std::int64_t kMaxExpandedTasks = kMaxArrayTasks;
}  // namespace

std::vector<int> expand_task_range(const std::string& range) {
  std::vector<int> out;
  std::string r = range.substr(0, range.find('%'));
  for (const auto& part : split(r, ',')) {
    if (part.empty()) continue;
    auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part));
      } else {
        int a = std::stoi(part.substr(0, dash));
        auto rest = part.substr(dash + 1);
        int step = 1;
        if (auto colon = rest.find(':'); colon != std::string::npos) {
          step = std::max(1, std::stoi(rest.substr(colon + 1)));
          rest = rest.substr(0, colon);
        }
        const int b = std::stoi(rest);
        // No Slurm task id exceeds MaxArraySize's ceiling (4,000,001 in slurm.conf(5)): a larger
        // bound is damaged text, and `i += step` up to INT_MAX would overflow (found by fuzzing).
        if (a < 0 || b > kMaxSlurmTaskId) continue;
        if ((static_cast<std::int64_t>(b) - a) / step + 1 + static_cast<std::int64_t>(out.size()) >
            kMaxExpandedTasks)
          continue;
        for (std::int64_t i = a; i <= b; i += step) out.push_back(static_cast<int>(i));
      }
    } catch (const std::exception&) {
      // A range form we do not know: skip it rather than guess.
    }
  }
  return out;
}

namespace {
// One entry per task of an array record (its array job id, a task range such as "3-9%2").
void push_tasks(std::vector<SlurmTask>& out, const SlurmTask& t, const std::string& array_id,
                const std::string& range) {
  // The bound holds for a whole listing too, not only per record: many records of large ranges are
  // no gridrun run's either (review of the fuzz fix, issue 24).
  if (static_cast<std::int64_t>(out.size()) >= kMaxExpandedTasks) return;
  for (int i : expand_task_range(range)) {
    SlurmTask ti = t;
    ti.id = array_id + "_" + std::to_string(i);
    out.push_back(std::move(ti));
  }
}
}  // namespace

std::vector<SlurmTask> parse_squeue(const std::string& text) {
  std::vector<SlurmTask> out;
  for (const auto& f : pipe_records(text, 2)) {
    SlurmTask t;
    t.id = f[0];
    t.state = f[1];
    if (f.size() > 2) t.elapsed = f[2];
    if (f.size() > 3) t.node = f[3];
    if (f.size() > 4) t.reason = f[4];
    t.source = "squeue";
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<SlurmTask> parse_scontrol(const std::string& text) {
  std::vector<SlurmTask> out;
  for (const auto& l : lines(text)) {
    std::map<std::string, std::string> kv;
    std::istringstream is(l);
    std::string tok;
    while (is >> tok) {
      auto eq = tok.find('=');
      if (eq != std::string::npos) kv.emplace(tok.substr(0, eq), tok.substr(eq + 1));
    }
    if (!kv.count("JobId")) continue;
    SlurmTask t;
    t.state = kv["JobState"];
    t.exit_code = kv.count("ExitCode") ? parse_exit(kv["ExitCode"]) : -1;
    t.elapsed = kv["RunTime"];
    t.node = kv["NodeList"] == "(null)" ? "" : kv["NodeList"];
    t.reason = kv["Reason"] == "None" ? "" : kv["Reason"];
    try {
      t.restarts = kv.count("Restarts") ? std::stoi(kv["Restarts"]) : 0;
    } catch (...) {
      t.restarts = 0;
    }
    t.source = "scontrol";
    auto arr = kv.find("ArrayJobId");
    auto task = kv.find("ArrayTaskId");
    if (arr != kv.end() && task != kv.end()) {
      push_tasks(out, t, arr->second, task->second);
    } else {
      t.id = kv["JobId"];
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::vector<SlurmTask> parse_sacct(const std::string& text) {
  std::vector<SlurmTask> out;
  for (const auto& f : pipe_records(text, 3)) {
    SlurmTask t;
    t.id = f[0];
    t.state = f[1].substr(0, f[1].find(' '));  // "CANCELLED by 0"
    t.exit_code = parse_exit(f[2]);
    if (f.size() > 3) t.elapsed = f[3];
    if (f.size() > 4) t.node = f[4] == "None assigned" ? "" : f[4];
    t.source = "sacct";
    // Pending array records come as "123_[4-9%2]".
    const auto lb = t.id.find("_[");
    if (lb != std::string::npos && t.id.back() == ']')
      push_tasks(out, t, t.id.substr(0, lb), t.id.substr(lb + 2, t.id.size() - lb - 3));
    else
      out.push_back(std::move(t));
  }
  return out;
}

std::optional<std::size_t> parse_max_array_size(const std::string& config_text) {
  for (const auto& l : lines(config_text)) {
    if (l.rfind("MaxArraySize", 0) != 0) continue;
    auto eq = l.find('=');
    if (eq == std::string::npos) continue;
    try {
      return static_cast<std::size_t>(std::stoull(l.substr(eq + 1)));
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

run::JobOutcome map_slurm_state(const std::string& s, int exit_code) {
  using JobState = run::JobOutcome;
  if (s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" || s == "RESIZING" ||
      s == "SUSPENDED")
    return JobState::Submitted;
  if (s == "RUNNING" || s == "CONFIGURING" || s == "COMPLETING" || s == "STAGE_OUT" || s == "SIGNALING")
    return JobState::Running;
  if (exit_code == run::kExitInterrupted) return JobState::Interrupted;
  if (s == "COMPLETED") return exit_code > 0 ? JobState::Failed : JobState::Completed;
  if (s == "TIMEOUT" || s == "CANCELLED" || s == "PREEMPTED" || s == "DEADLINE") return JobState::Interrupted;
  return JobState::Failed;  // FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, SPECIAL_EXIT, ...
}

TaskJobTrace read_task_job_trace(const run::RunDir& rd, const std::string& job_id,
                                 const std::string& task_id) {
  TaskJobTrace t;
  // Written by the body with `echo CODE`: anything else (a damaged file) says nothing.
  if (const auto code = base::try_read_file(rd.slurm_ended_dir() + "/" + job_id, base::kinds::kSlurmEnded)) {
    const std::string c = base::trim(*code);
    if (!c.empty() && c.size() <= 3 && c.find_first_not_of("0123456789") == std::string::npos)
      t.ended_code = std::stoi(c);
  }
  // Headers "start|end SECONDS task ID"; the lines between them list other jobs ("job ...").
  if (task_id.empty()) return t;
  if (const auto others = base::try_read_file(rd.others_file(job_id), base::kinds::kSlurmOthers)) {
    for (const auto& l : lines(*others)) {
      const bool start = l.rfind("start ", 0) == 0;
      if (!start && l.rfind("end ", 0) != 0) continue;
      const auto at = l.rfind(" task ");
      t.started = start && at != std::string::npos && l.substr(at + 6) == task_id;
    }
  }
  return t;
}

run::JobOutcome job_outcome_in_task(const TaskView& task, const TaskJobTrace& trace) {
  using JobState = run::JobOutcome;
  const auto ended = [&] { return *trace.ended_code == 0 ? JobState::Completed : JobState::Failed; };
  if (task.outcome == JobState::Submitted)
    return trace.ended_code && task.restarts > 0 ? ended() : task.outcome;
  if (trace.ended_code) return ended();
  if (task.outcome == JobState::Running)
    return trace.started || !task.any_started ? JobState::Running : JobState::Submitted;
  return task.outcome;
}

std::string SlurmCli::sbatch(const std::string& script, const std::vector<std::string>& extra) const {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(script);
  auto r = base::run_captured(argv);
  if (!r.started || r.exit_code != 0) fail(argv, r);
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));  // "1234" or "1234;cluster"
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("sbatch --parsable " + script + ": unexpected output '" + r.out + "'");
  return id;
}

std::map<std::string, SlurmTask> SlurmCli::query(const std::vector<std::string>& job_ids,
                                                 bool* answered) const {
  std::map<std::string, SlurmTask> out;
  if (answered) *answered = false;
  if (job_ids.empty()) {
    if (answered) *answered = true;
    return out;
  }
  const std::string list = join(job_ids, ',');
  // 1. sacct: complete history when accounting is on; prints an error and exits 1 without it.
  auto a = base::run_captured(
      {"sacct", "-n", "-P", "-X", "-j", list, "-o", "JobID,State,ExitCode,Elapsed,NodeList"});
  if (a.started && a.exit_code == 0) {
    for (auto& t : parse_sacct(a.out)) out[t.id] = t;
    if (answered) *answered = true;
  }
  // 2. scontrol: one call per job id (it takes a single id); knows finished jobs for MinJobAge.
  for (const auto& id : job_ids) {
    auto s = base::run_captured({"scontrol", "-o", "show", "job", id});
    if (!s.started) break;
    if (s.exit_code != 0) continue;  // "Invalid job id": purged; sacct or disk must tell
    if (answered) *answered = true;
    for (auto& t : parse_scontrol(s.out)) {
      auto& slot = out[t.id];
      if (t.elapsed.empty()) t.elapsed = slot.elapsed;
      slot = t;
    }
  }
  // 3. squeue: the live view of pending and running tasks.
  auto q = base::run_captured({"squeue", "-h", "-r", "-j", list, "-o", "%i|%T|%M|%N|%r"});
  if (q.started && q.exit_code == 0) {
    if (answered) *answered = true;
    for (auto& t : parse_squeue(q.out)) {
      auto& slot = out[t.id];
      t.restarts = slot.restarts;
      t.exit_code = slot.exit_code;
      slot = t;
    }
  }
  return out;
}

std::vector<std::string> SlurmCli::active(const std::vector<std::string>& job_ids) const {
  std::vector<std::string> out;
  if (job_ids.empty()) return out;
  auto q = base::run_captured({"squeue", "-h", "-j", join(job_ids, ','), "-o", "%F"});
  if (!q.started || q.exit_code != 0) return out;
  for (const auto& l : lines(q.out))
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  return out;
}

void SlurmCli::scancel(const std::vector<std::string>& job_ids) const {
  if (job_ids.empty()) return;
  std::vector<std::string> argv{"scancel"};
  argv.insert(argv.end(), job_ids.begin(), job_ids.end());
  auto r = base::run_captured(argv);
  if (!r.started || r.exit_code != 0) fail(argv, r);
}

std::optional<std::size_t> SlurmCli::max_array_size() const {
  auto r = base::run_captured({"scontrol", "show", "config"});
  if (!r.started || r.exit_code != 0) return std::nullopt;
  return parse_max_array_size(r.out);
}

namespace {
std::optional<std::string> sinfo_field(const std::string& partition, const char* fmt) {
  std::vector<std::string> argv{"sinfo", "-h", "-o", fmt};
  if (!partition.empty()) {
    argv.push_back("-p");
    argv.push_back(partition);
  }
  auto r = base::run_captured(argv);
  if (!r.started || r.exit_code != 0) return std::nullopt;
  auto ls = lines(r.out);
  if (ls.empty()) return std::nullopt;
  return ls.front();
}
}  // namespace

std::optional<int> SlurmCli::node_gpus(const std::string& partition) const {
  auto g = sinfo_field(partition, "%G");  // "gpu:4" or "gpu:a100:4(S:0-1)"
  if (!g) return std::nullopt;
  static const std::string kGresGpu = "gpu";  // Slurm's generic resource name, not a device's
  for (const auto& item : split(*g, ',')) {
    if (item.rfind(kGresGpu, 0) != 0) continue;
    auto f = split(item.substr(0, item.find('(')), ':');
    try {
      return std::stoi(f.back());
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<int> SlurmCli::node_cpus(const std::string& partition) const {
  auto c = sinfo_field(partition, "%c");
  if (!c) return std::nullopt;
  try {
    return std::stoi(*c);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace gridrun::slurm
