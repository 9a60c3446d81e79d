// The figures of a compare-by run's phases ("one large vs several small"): from the facts the
// scheduler recorded (run/state.hpp's PhaseRecord: makespan, allocated resource-seconds) and what
// the jobs' result files say: what they achieved, and in which sitting each attempt ran.
//
// Why here, and only here: the scheduler knows which jobs ran and for how long, the result files
// know samples, utilization, time to target and the sittings; the report is the one place that
// sees both, so the figures are computed and named once (local and Slurm runs alike).
//
// Why sittings: a phase is a measurement only when all its jobs ran together, in one sitting of
// the launcher (one `gridrun run`, one `gridrun submit` without requeues). An interruption, a
// resume, jobs added to the grid later or a Slurm requeue split it, and its makespan then mixes
// sittings; such a phase gets no figures, only the reason and the command that measures it again.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gridrun/results/reader.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/run/state.hpp"

namespace gridrun::report {

// Where a job's time went: its /summary time_*_s and *_unix figures (the attempt that wrote the
// summary; docs/results.md "Where the time went"). NaN where the file does not say (files from
// before these figures, jobs that failed before training).
struct TimeSplit {
  double wait_s = std::nan("");    // from its phase's start until its launcher started (phases only)
  double launch_s = std::nan("");  // launcher start (else process start) to the first training step:
                                   // mpirun/srun, process start, library load, data and model set-up
  double train_s = std::nan(""), eval_s = std::nan(""), checkpoint_s = std::nan("");
  double total_s = std::nan("");  // launcher start (else process start) to the summary's end
  double resources = 1;           // cores (cpu) or GPUs it held: the weight of its share
};
TimeSplit time_split(const results::JobData& job);
// The means over `splits` (NaN entries skipped) and the resource-weighted share of their time that
// went to launching: sum(launch x resources) / sum(total x resources).
struct TimeSummary {
  TimeSplit mean;
  double launch_share = std::nan("");
  int jobs = 0;  // jobs with a known split
};
TimeSummary summarize_times(const std::vector<TimeSplit>& splits);

// One phase as the report shows it.
struct PhaseFigures {
  std::string name;   // the compare-by value
  std::string label;  // "KEY=VALUE" ("ranks=2", "ranks=2 #3"), or the value when the key is unknown
  // The compared value and which measurement of it this is (compare.repeats; 0 = the first).
  std::string value;
  int repeat = 0;
  double makespan_s = std::nan(""), samples_per_s = std::nan(""), util_mean = std::nan("");
  double alloc_util = std::nan(""), samples = std::nan("");
  // From the phase's first job start until its last job reached target_accuracy (NaN unless all
  // did): what "which arrangement answers sooner" asks.
  double time_to_target_s = std::nan("");
  // The relative spread of throughput over seeds (largest coefficient of variation of samples/s
  // among the phase's jobs that differ only in their seed; NaN without repeated seeds).
  double seed_noise = std::nan("");
  // What a calibrated `gridrun simulate`/`run` predicted for it before it ran (prediction.json),
  // NaN when nothing was predicted from a calibration.
  double predicted_makespan_s = std::nan("");
  // The largest share of the CPU other processes took while the calibration behind that
  // prediction measured (prediction.json); NaN when not recorded. A phase faster than predicted
  // from a loaded calibration is the calibration's doing, not the phase's.
  double calibration_other_cpu_share = std::nan("");
  // Some of its jobs ran at the same time: the scheduler's record (max_running) when there is one,
  // else overlapping start and end times in the job files.
  bool side_by_side = false;
  // What it is, in words that hold whatever the compare-by key: "2 jobs x 1 rank, side by side",
  // "1 job x 2 ranks", "1 job x 1 rank x 2 threads", "4 jobs x 1-2 ranks, one after another".
  std::string arrangement;
  // The cores (CPU jobs: ranks x threads) or GPUs (GPU jobs: ranks) each of its jobs holds when all
  // hold the same, else NaN; `gpu` when its jobs are GPU jobs (the unit of the resource-seconds).
  double job_resources = std::nan("");
  bool gpu = false;
  // Resource-seconds its jobs spent in training steps (time_train_s x cores or GPUs, summed): the
  // makespan without launch, evaluation and checkpoints. NaN unless every job says.
  double train_resource_s = std::nan("");
  // The conditions it was measured under (state.json's record, local runs): the share (0-1) of the
  // machine's CPU that went to processes outside the run while it ran (NaN when unknown), the
  // sitting that measured it ("" when unknown) and when it started (seconds since the epoch).
  double other_cpu_share = std::nan("");
  std::string sitting;
  double start_unix = std::nan("");
  // GPU jobs: the conditions of its jobs' GPUs (their /summary gpu_* figures, hw/gpu_conditions.hpp;
  // NaN when no job says: CPU jobs, files from before them, NVML without the answer): the largest
  // share of samples a job's GPUs had a compute process of no job of the run beside it, and the
  // most such processes in one sample; the largest share of samples a job's GPUs were throttled
  // (power, thermal, hardware slowdown) and the reasons seen (NVML's bits, OR'ed); the lowest mean
  // SM clock as a share of its maximum. A job's figure counts for the phase: one slowed job slows it.
  double gpu_foreign_share = std::nan(""), gpu_foreign_procs = std::nan("");
  double gpu_throttled_share = std::nan(""), gpu_sm_clock_share = std::nan("");
  unsigned long long gpu_throttle_reasons = 0;
  // Slurm runs: the other Slurm jobs (of no job of this run) its jobs' tasks saw running on their
  // nodes at their start or end ("1234 alice sleeper", distinct, in id order), and whether any of
  // its jobs recorded a listing at all (false: local runs, older runs, squeue failed).
  std::vector<std::string> slurm_others;
  bool slurm_others_known = false;
  // Where its jobs' time went (means per job, wait from the phase's start) and the share of it
  // spent before the first step: what makes several small jobs slower than their step times say.
  TimeSummary time;
  int sittings = 0;                   // distinct sittings its jobs' attempts ran in (0: not recorded)
  std::string unmeasured;             // why the figures are withheld ("" when the phase is a measurement)
  std::vector<std::string> diverged;  // its jobs whose loss diverged ("ID (reason)"): not a measurement
  std::vector<std::string> jobs;      // the phase's jobs with a readable file
};

// What a Slurm task recorded of the other jobs on its nodes (logs/<id>.others, slurm/src/task_body.sh):
// `known` when it holds a listing squeue answered, `others` the jobs it listed ("1234 alice sleeper").
struct SlurmOthers {
  bool known = false;
  std::vector<std::string> others;
};
// Reads logs/<id>.others of each of `ids` that has one (a missing file is not an entry; unreadable
// lines are skipped: the file is advice, written by a bash task).
std::map<std::string, SlurmOthers> read_slurm_others(const run::RunDir& rd,
                                                     const std::vector<std::string>& ids);

struct PhaseInput {
  std::map<std::string, run::PhaseRecord> recorded;  // state.json "phases" (empty for Slurm runs)
  std::string compare_by;                            // the grid's compare-by key ("" if unknown)
  std::map<std::string, SlurmOthers> slurm_others;   // by job id (read_slurm_others; Slurm runs)
};

// The phases of a run, in the order they ran (a recorded phase's start, else its first job's).
// A phase's jobs are the readable files whose `meta.phase` is its value. A recorded phase (local
// runs) takes its makespan and allocation from the record: samples = sum of its jobs' `samples`,
// samples_per_s = samples / makespan, alloc_util = busy / (capacity x makespan), util_mean = mean
// of the jobs' utilization means (0-1), else alloc_util. Without a record (Slurm runs: no
// scheduler of ours saw them), the makespan runs from the first job's start to the last one's end.
// A phase whose jobs ran in more than one sitting, or that its record does not cover, is
// `unmeasured` and its figures are NaN.
std::vector<PhaseFigures> complete_phases(const PhaseInput& in,
                                          const std::vector<const results::JobData*>& jobs);

}  // namespace gridrun::report
