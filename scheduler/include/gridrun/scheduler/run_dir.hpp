// The run directory: the on-disk truth shared by `gridrun run`, `gridrun submit`, `status`,
// `collect` and `report`. Everything a crashed `gridrun` needs to resume is here.
//
//   runs/<name>/grid.yaml             copy of the grid as given
//   runs/<name>/jobs/<id>.json        one file per job (gridrun::jobs::write_job_file)
//   runs/<name>/logs/<id>.out|.err    launcher stdout/stderr, appended per attempt
//   runs/<name>/results/<id>.h5       per-job results (<id>.h5.partial while running)
//   runs/<name>/checkpoints/<id>/     runner checkpoints
//   runs/<name>/state.json            per-job status, attempts, exit codes, timings, slurm ids
//   runs/<name>/lock                  PID of the `gridrun run` holding the run (flock'ed)
//   runs/<name>/results.h5            run index built by `gridrun collect`
//   runs/<name>/slurm/                generated sbatch scripts and job-list files
//
// gridrun-train exit codes (the contract between runner and launchers):
//   0 completed or target reached, 1 runtime failure, 2 bad input, 75 interrupted after writing
//   a checkpoint (SIGTERM/SIGUSR1; rerun with --resume).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridrun::scheduler {

inline constexpr int kExitInterrupted = 75;
// Recorded for a job the watchdog ended because rank 0 stopped heartbeating (as timeout(1) does).
inline constexpr int kExitNoHeartbeat = 124;

enum class JobState { Pending, Running, Completed, Failed, Interrupted, TargetReached, Submitted };
std::string to_string(JobState s);
JobState job_state_from_string(const std::string& s);  // throws std::invalid_argument

struct JobRecord {
  std::string id;
  JobState state = JobState::Pending;
  int attempts = 0;
  std::vector<int> exit_codes;     // one per attempt
  double start_unix = 0, end_unix = 0;
  std::string cores, gpus, host;   // last placement
  std::string phase;               // compare-by phase value, if any
  std::string slurm_job_id;        // "1234_7" when submitted through Slurm
};

struct RunState {
  std::string name;
  std::map<std::string, JobRecord> jobs;  // by id
  std::map<std::string, std::string> phases_json;  // phase value -> JSON object of phase figures
};

class RunDir {
 public:
  explicit RunDir(std::string root);   // runs/<name>
  const std::string& root() const { return root_; }
  std::string job_file(const std::string& id) const;
  std::string log_out(const std::string& id) const;
  std::string log_err(const std::string& id) const;
  std::string results_dir() const;
  std::string result_file(const std::string& id) const;   // .../results/<id>.h5
  std::string checkpoint_dir(const std::string& id) const;
  std::string slurm_dir() const;
  std::string state_file() const;
  std::string index_file() const;                          // results.h5
  std::string grid_copy() const;                           // grid.yaml
  std::string lock_file() const;                           // lock
  std::string rankfile(const std::string& id) const;       // jobs/<id>.rankfile (Open MPI binding)
  void create_layout() const;                              // mkdir -p of all folders

  RunState load_state() const;                             // empty state if no file; throws
                                                           // std::runtime_error naming a corrupt file
  void save_state(const RunState& s) const;                // temp file + rename (atomic)

 private:
  std::string root_;
};

// Exclusive ownership of a run directory for one `gridrun run`: flock() on runs/<name>/lock, which
// holds the owner's PID. The kernel drops the lock when the process dies, so a crashed run never
// leaves a stale lock behind; the PID is only there to name the holder.
class RunLocked : public std::runtime_error {
 public:
  RunLocked(const std::string& msg, long pid) : std::runtime_error(msg), pid_(pid) {}
  long pid() const { return pid_; }
 private:
  long pid_;
};

class RunLock {
 public:
  // Throws RunLocked ("... is in use by gridrun PID 1234") when another process holds it.
  explicit RunLock(const RunDir& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace gridrun::scheduler
