// The run directory: the on-disk truth shared by `gridrun run`, `gridrun submit`, `status`,
// `collect` and `report`. Everything a crashed `gridrun` needs to resume is here.
//
//   runs/<name>/grid.yaml             copy of the grid as given
//   runs/<name>/jobs/<id>.json        one file per job (gridrun::jobs::write_job_file)
//   runs/<name>/logs/<id>.out|.err    launcher stdout/stderr, appended per attempt
//   runs/<name>/logs/<id>.others      Slurm: the other jobs on its nodes at its task's start and end
//   runs/<name>/results/<id>.h5       per-job results (<id>.h5.partial while running)
//   runs/<name>/results/.gridrun-index  cache of what commands read of those (results/run_reader.hpp)
//   runs/<name>/checkpoints/<id>/     runner checkpoints
//   runs/<name>/state.json            per-job status, attempts, exit codes, timings, slurm ids
//   runs/<name>/lock                  PID, host and start of the `gridrun run` holding the run (flock'ed)
//   runs/<name>/launch-token          secret of the last `gridrun run`'s processes (0600; see below)
//   runs/<name>/results.h5            run index built by `gridrun collect`
//   runs/<name>/slurm/                generated sbatch scripts and job-list files
//   runs/<name>/.cache/summary.json   what `gridrun ls` shows of the run, with the stamps it holds for
//                                     (run_summary.hpp)
//
// Why a module of its own (run/, above base/ and jobs/): the run directory is the contract between
// every part of gridrun (launchers, the runner, the Slurm scripts, status and reports), so its paths,
// its state file and the exit codes are written once, here, and no module spells them by hand.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "gridrun/run/exit_codes.hpp"
#include "gridrun/run/state.hpp"

namespace gridrun::run {

// Every path of a run directory. Nothing else spells them: launchers (the local executor, the
// sbatch scripts) get them from here, the scripts as shell variables.
class RunDir {
 public:
  explicit RunDir(std::string root);  // runs/<name>
  // OUT/<grid name>: where `gridrun run|submit --out OUT` put a grid's run.
  static RunDir for_grid(const std::string& out_dir, const std::string& grid_name);
  // The run whose results folder is `results_dir` (gridrun-train's --out): its parent.
  static RunDir of_results_dir(const std::string& results_dir);
  const std::string& root() const { return root_; }
  std::string jobs_dir() const;                             // jobs/
  std::string job_file(const std::string& id) const;        // jobs/<id>.json
  std::string logs_dir() const;                             // logs/
  std::string log_out(const std::string& id) const;         // logs/<id>.out
  std::string log_err(const std::string& id) const;         // logs/<id>.err
  std::string log_file(const std::string& name) const;      // logs/<name> (Slurm's patterns)
  std::string heartbeat_file(const std::string& id) const;  // logs/<id>.out.heartbeat
  std::string others_file(const std::string& id) const;     // logs/<id>.others (Slurm's other jobs)
  std::string results_dir() const;                          // results/ (its files: results/run_reader.hpp)
  std::string result_file(const std::string& id) const;     // .../results/<id>.h5
  std::string partial_file(const std::string& id) const;    // .../results/<id>.h5.partial
  // A job's file name in any results folder (gridrun-train --out may name another one).
  static std::string result_file_name(const std::string& id);    // <id>.h5
  static std::string partial_file_name(const std::string& id);   // <id>.h5.partial
  static std::string profile_trace_name(const std::string& id);  // <id>.profile.json (Chrome trace)
  std::string checkpoints_dir() const;                           // checkpoints/
  std::string checkpoint_dir(const std::string& id) const;       // checkpoints/<id>/
  std::string slurm_dir() const;                                 // slurm/
  std::string slurm_file(const std::string& name) const;         // slurm/<name> (scripts, job lists)
  std::string slurm_ended_dir() const;                           // slurm/ended/ (exit codes of ended jobs)
  std::string submitted_file() const;                            // slurm/submitted.tsv
  std::string state_file() const;
  std::string index_file() const;                     // results.h5
  std::string grid_copy() const;                      // grid.yaml
  std::string probe_file() const;                     // probe.json (`gridrun probe --out`, report roofs)
  std::string calibration_file() const;               // calibration.json (`gridrun calibrate`)
  std::string prediction_file() const;                // prediction.json (prediction.hpp)
  std::string cache_dir() const;                      // .cache/ (caches a command may drop)
  std::string summary_file() const;                   // .cache/summary.json (run_summary.hpp)
  std::string lock_file() const;                      // lock
  std::string launch_token_file() const;              // launch-token
  std::string rankfile(const std::string& id) const;  // jobs/<id>.rankfile (Open MPI binding)
  // workers/: one folder of pipes per warm worker (run/worker_channel.hpp), while it lives
  std::string workers_dir() const { return root_ + "/workers"; }
  void create_layout() const;  // mkdir -p of all folders but slurm/
  // The inverses of the job file names: the id a name stands for (of a path, its last component),
  // nullopt for a name that is not such a file. Readers of a folder use these, never a suffix.
  static std::optional<std::string> job_id_of_job_file(const std::string& name);  // <id>.json
  // <id>.h5 or <id>.h5.partial
  static std::optional<std::string> job_id_of_results_file(const std::string& name);
  static bool is_partial_file(const std::string& name);  // <id>.h5.partial
  // The results folder's caches of its job files (results/run_reader.hpp): the index readers keep
  // and the journal writers and readers append to. Neither says anything the job files do not.
  static constexpr const char* kResultsIndexName = ".gridrun-index";
  static constexpr const char* kResultsJournalName = ".gridrun-journal";
  // Whether root() holds a run: a state.json or a jobs/ folder (a crashed `gridrun submit` may have
  // written only the job files). What `gridrun status` and `gridrun ls` take for a run directory.
  bool holds_run() const {
    std::error_code ec;
    return std::filesystem::is_regular_file(state_file(), ec) ||
           std::filesystem::is_directory(jobs_dir(), ec);
  }

  // Empty state if no file; throws std::runtime_error naming a corrupt file. `with_jobs` false:
  // everything but the per-job records (RunState::jobs stays empty; the file is still checked
  // whole), for readers that need the run's head only (a report of 100,000 jobs: its phases and
  // `--set`, not 30 MB of job records).
  RunState load_state(bool with_jobs = true) const;
  void save_state(const RunState& s) const;  // base::write_file_atomic

  // The launch token: a random secret that a `gridrun run` puts into the environment of every
  // process it launches (kLaunchTokenEnv, with kRunDirEnv), so that the next `gridrun run` of this
  // directory can tell what an earlier one left running (a SIGKILL of gridrun and mpirun leaves
  // ranks behind) from any other process, whatever that process names in its arguments. Secret
  // (0600, 128 random bits): a process can only carry it if gridrun gave it. One per sitting.
  // The last sitting's token, "" when there is none (no file, or one that holds no token).
  std::string launch_token() const;
  // A new token for this sitting, written over the last one (atomically, 0600) and returned.
  std::string renew_launch_token() const;

 private:
  std::string root_;
};

// The environment entries of the launch token (RunDir::launch_token) and of the run directory it
// belongs to (absolute, canonical: a copy of a run directory carries the same token, but not the
// same path).
inline constexpr const char* kLaunchTokenEnv = "GRIDRUN_RUN_TOKEN";
inline constexpr const char* kRunDirEnv = "GRIDRUN_RUN_DIR";

// Exclusive ownership of a run directory for one `gridrun run`: flock() on runs/<name>/lock, which
// holds the owner's PID, host and start time ("PID\nHOST\nSTART\n", START in clock ticks since
// boot, base::start_ticks). The kernel drops the lock when the process dies, so a crashed run never
// leaves a stale lock behind; PID and host are there to name the holder and to let `gridrun cancel`
// signal it (only from the same host: a PID means nothing elsewhere), START to tell it from a
// later process given the same PID. Anyone who can write the file can forge it: cancel checks the
// named process against the kernel's view before it signals (scheduler/cancel.hpp).
class RunLocked : public std::runtime_error {
 public:
  RunLocked(const std::string& msg, long pid) : std::runtime_error(msg), pid_(pid) {}
  long pid() const { return pid_; }

 private:
  long pid_;
};

class RunLock {
 public:
  // Throws RunLocked ("... is in use by another gridrun (PID 1234 on HOST ...") when another
  // process holds it.
  explicit RunLock(const RunDir& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// The process holding a run's lock right now, as its lock file names it.
struct LockHolder {
  long pid = 0;      // 0 when the file does not say (a lock taken by an older gridrun: PID only)
  std::string host;  // "" when the file does not say
  unsigned long long start_ticks = 0;  // the holder's start (base::start_ticks); 0 when not said
};
// The holder of `dir`'s lock, or nullopt when nobody holds it (no lock file, an empty one: the
// holder ended and let go, or one a crashed holder left: the kernel dropped its flock). Why a
// non-blocking flock probe besides the file's text: a crashed holder leaves its PID in the file,
// and that PID may belong to another process by now. The probe takes the lock for a moment only
// when the file names a holder, so a `gridrun run` starting in that instant may be refused once.
std::optional<LockHolder> lock_holder(const RunDir& dir);

}  // namespace gridrun::run
