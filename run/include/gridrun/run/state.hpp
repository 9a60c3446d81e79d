// What state.json holds: one record per job and the facts of each compare-by phase, in ONE
// vocabulary of job outcomes shared by `gridrun run`, `gridrun submit`/`status`/`cancel` and
// (mapped here) the results files' `status` attribute. RunDir::load_state/save_state are its one
// reader and writer.
//
// Why one enum: the run loop, the Slurm submitter and the status merge each used to decide
// "finished" over their own strings (results status, state names, Slurm states). Every such decision
// now goes through is_finished()/is_queued() on a JobOutcome; Slurm's states are mapped onto it in
// slurm/ (map_slurm_state) and a results file's status by outcome_from_results().
//
// Why a phase records facts, not figures: the scheduler knows which jobs a phase ran, how long it
// took and the resource-seconds it held; what the jobs achieved (samples, utilization, time to
// target) is in their result files, and the report derives the figures from both
// (report/phases.hpp), in one place.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace gridrun::run {

// The order is the order of the counts in `gridrun status` (do not reorder).
enum class JobOutcome {
  Pending,
  Running,
  Completed,
  Failed,
  Interrupted,
  TargetReached,
  Submitted,
  Diverged
};
std::string to_string(JobOutcome s);                       // "pending", ..., "target_reached"
JobOutcome job_outcome_from_string(const std::string& s);  // throws std::invalid_argument

// A results file's `status` attribute ("completed", "target_reached", "failed", "interrupted",
// "running", "diverged"; "" when there is no readable file) as an outcome; anything else is Pending.
JobOutcome outcome_from_results(const std::string& results_status);
// Completed or target reached: the job never runs again (unless --rerun all).
bool is_finished(JobOutcome s);
// Submitted or running: a scheduler (Slurm) holds it, so it must not be submitted again.
bool is_queued(JobOutcome s);
// Failed or diverged: it ended without finishing (a failure reason applies; --rerun failed runs it).
bool is_failure(JobOutcome s);

struct JobRecord {
  std::string id;
  JobOutcome state = JobOutcome::Pending;
  int attempts = 0;
  std::vector<int> exit_codes;  // one per attempt
  double start_unix = 0, end_unix = 0;
  std::string cores, gpus, host;  // last placement
  std::string phase;              // compare-by phase value, if any
  std::string slurm_job_id;       // "1234_7" when submitted through Slurm
};

// One compare-by phase as `gridrun run` saw it run (state.json "phases".<name>).
struct PhaseRecord {
  std::string name;                       // the compare-by value
  double start_unix = std::nan("");       // when the phase started (phases are listed in run order)
  double makespan_s = std::nan("");       // from the phase's start to its last job's end
  double busy_resource_s = std::nan("");  // allocated resource-seconds (GPUs on a GPU cluster, else cores)
  double capacity = std::nan("");         // GPUs (GPU cluster) or cores of the cluster
  // Most of its jobs running at once, as the scheduler launched them (the jobs' own start times
  // come after their launch, library and data load, so they can miss an overlap of short jobs).
  double max_running = std::nan("");
  // The conditions it was measured under: the share (0-1) of the machine's CPU that went to
  // processes outside the run while it ran (node busy minus the run's own CPU time, from /proc/stat
  // and getrusage; NaN when unknown), and the sitting (one `gridrun run` invocation) that ran it.
  double other_cpu_share = std::nan("");
  std::string sitting;
  std::vector<std::string> jobs;  // the ids it ran
};

// Field-wise equality, a NaN equal to a NaN (a phase's unknown figures): whether state.json needs
// writing (RunState's `warnings`, never saved, are not compared).
bool operator==(const JobRecord& a, const JobRecord& b);
bool operator==(const PhaseRecord& a, const PhaseRecord& b);

struct RunState {
  std::string name;
  // The folder of the grid file the run was last planned from: relative model_file and
  // data_file paths in the run's grid.yaml copy start there (jobs::LoadOptions::base_dir).
  std::string grid_dir;
  // The grid file itself, absolute (state.json "grid_file"; "" from an older gridrun): what
  // `gridrun status` and `ls` name in the command that resumes an interrupted run.
  std::string grid_file;
  // The `--set KEY=VALUE` overrides the run was last planned with (state.json "overrides"): with
  // the grid.yaml copy they give the ids of the run's current grid.
  std::vector<std::string> overrides;
  // The `--repeats N` it was last planned with (state.json "repeats"; 0: the grid's own).
  int repeats = 0;
  std::map<std::string, JobRecord> jobs;      // by id
  std::map<std::string, PhaseRecord> phases;  // by compare-by value
  // What RunDir::load_state left out, each naming the file (an entry whose id is not a job id);
  // never saved. The command that loaded it shows them.
  std::vector<std::string> warnings;
};
bool operator==(const RunState& a, const RunState& b);

// Each id's record in `s.jobs` (added, with its id, when absent), in the order of `ids`: one sort
// of the ids and one walk of the map in id order. A tree search per id costs ~17 cache misses at
// 100,000 jobs, and `gridrun run` needs every job's record several times (prepare, reconcile,
// summary). The pointers hold while the map keeps those entries (a move of the RunState keeps them).
std::vector<JobRecord*> records_of(RunState& s, const std::vector<std::string>& ids);

}  // namespace gridrun::run
