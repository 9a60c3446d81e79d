// What gridrun asks of Slurm, through its client commands, and the parsers for their output.
//
// Why the command-line clients and not libslurm: their text formats are stable across versions and
// sites (libslurm's ABI is not), they honour the user's SLURM_CONF, and every call is something a
// user can paste into a shell. The parsers are pure functions of the text so they are unit-tested
// on captured output; SlurmCli itself is tested against the real local cluster.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/run/state.hpp"

namespace gridrun::run {
class RunDir;
}  // namespace gridrun::run

namespace gridrun::slurm {

// One job or array task as a Slurm client reports it. Empty fields: the source did not say.
struct SlurmTask {
  std::string id;       // "1234_7" for array tasks, "1240" otherwise
  std::string state;    // Slurm base state: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
  int exit_code = -1;   // of the batch script; -1 unknown
  std::string elapsed;  // "00:01:02"
  std::string node;
  int restarts = 0;
  std::string reason;  // pending reason, e.g. "Dependency"
  std::string source;  // "squeue", "scontrol" or "sacct"
};

// `squeue -h -r -o '%i|%T|%M|%N|%r'` lines.
std::vector<SlurmTask> parse_squeue(const std::string& text);
// `scontrol -o show job` records (one per line). A pending array record ("ArrayTaskId=3-9%2")
// expands to one entry per task.
std::vector<SlurmTask> parse_scontrol(const std::string& text);
// `sacct -n -P -X -o JobID,State,ExitCode,Elapsed,NodeList` lines ("CANCELLED by 0" -> CANCELLED).
std::vector<SlurmTask> parse_sacct(const std::string& text);
// "MaxArraySize            = 1001" from `scontrol show config`; nullopt when absent.
// The most tasks gridrun puts in one array, whatever the site's MaxArraySize (Slurm allows up to
// 4,000,001): a grid beyond it is split into several arrays. Also the bound on the task ranges the
// squeue/sacct parsers expand, per record and per listing. 100,000 (Slurm's default MaxArraySize
// is 1001): a listing of a million tasks took over a second to expand and free under ASan (fuzzing,
// issue 24), and no gridrun run comes near it.
constexpr std::size_t kMaxArrayTasks = 100'000;
std::optional<std::size_t> parse_max_array_size(const std::string& config_text);
// "3-9%2", "1,4,7-8" -> task numbers.
std::vector<int> expand_task_range(const std::string& range);

// Slurm state (+ exit code of the batch script) -> gridrun job outcome (the one vocabulary of
// state.json and `gridrun status`):
//   PENDING, REQUEUED, REQUEUE_HOLD, RESIZING, SUSPENDED      -> Submitted
//   RUNNING, CONFIGURING, COMPLETING, STAGE_OUT, SIGNALING     -> Running
//   COMPLETED                                                 -> Completed
//   TIMEOUT, CANCELLED, PREEMPTED, DEADLINE, and exit code 75 -> Interrupted (resume possible)
//   FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, other        -> Failed
run::JobOutcome map_slurm_state(const std::string& state, int exit_code);

// What the task body (slurm/src/task_body.sh) recorded of one job of its task. A task may run
// several jobs (a chain of `submit --jobs-per-task`, the entries of a packed line) while Slurm knows
// only the task's state. `ended_code`: slurm/ended/<id>, the exit code of a job that ended for good
// (interrupted jobs get none; a task's first start removes an earlier submission's). `started`:
// the job's logs/<id>.others ends with a "start" listing of task `task_id` ("1234_7"), written as
// the job starts; an "end" one follows when it ends or is interrupted (a job of a host that crashed
// keeps its "start"). A listing of another task is an earlier submission's and does not count;
// with an empty `task_id` the listings are not read (started stays false).
struct TaskJobTrace {
  std::optional<int> ended_code;
  bool started = false;
};
TaskJobTrace read_task_job_trace(const run::RunDir& rd, const std::string& job_id,
                                 const std::string& task_id);

// The task, as far as the rule below needs it: its outcome (map_slurm_state), Slurm's restart count
// (a requeued task skips the jobs that ended before), and whether any of its jobs has started
// (until one has, a running task is still starting, and its jobs are the task's).
struct TaskView {
  run::JobOutcome outcome = run::JobOutcome::Submitted;
  int restarts = 0;
  bool any_started = false;
};
// A job's outcome from its task's and its trace: a job that ended has its own (code 0 Completed,
// else Failed), in a task still running, requeued (restarts > 0: it will be skipped) or since cut
// short; in a running task a job not started while another has waits for its turn (Submitted); a
// queued task's other jobs are queued; otherwise the task's outcome.
run::JobOutcome job_outcome_in_task(const TaskView& task, const TaskJobTrace& trace);

// The client commands. Methods throw std::runtime_error with the command and its stderr on failure.
class SlurmCli {
 public:
  // `sbatch --parsable [extra...] SCRIPT` -> the job id ("1234").
  std::string sbatch(const std::string& script, const std::vector<std::string>& extra = {}) const;
  // Everything Slurm still knows about these jobs (array ids expand to their tasks), keyed by
  // task id. Sources merged from oldest to freshest: sacct (when accounting answers), scontrol
  // (keeps finished jobs MinJobAge seconds), squeue. Never throws: an unreachable Slurm yields
  // an empty map and `answered` false.
  std::map<std::string, SlurmTask> query(const std::vector<std::string>& job_ids,
                                         bool* answered = nullptr) const;
  // Ids of these jobs that squeue still lists (pending, running or completing), as given.
  std::vector<std::string> active(const std::vector<std::string>& job_ids) const;
  void scancel(const std::vector<std::string>& job_ids) const;
  // MaxArraySize from `scontrol show config`; nullopt when Slurm does not answer.
  std::optional<std::size_t> max_array_size() const;
  // GPUs per node of the partition (default partition when empty), from sinfo's %G; nullopt if
  // unknown.
  std::optional<int> node_gpus(const std::string& partition) const;
  std::optional<int> node_cpus(const std::string& partition) const;
};

}  // namespace gridrun::slurm
