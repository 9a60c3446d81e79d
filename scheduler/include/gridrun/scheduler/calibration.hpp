// The calibration figures of a grid's configurations (calibration.cpp): what `gridrun calibrate`
// (calibrate.hpp) measured, keyed by configuration; the seconds they predict; calibration.json,
// written and read back checked; the plans of side-by-side groups. A layer of its own below the
// command, because the prediction (src/predict.hpp) reads these figures and the command predicts.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"
#include "gridrun/run/prediction.hpp"

namespace gridrun::scheduler {

// What one calibration run of a configuration measured (from its job file's /summary, /steps and
// /epochs, and its exit as the launcher saw it).
struct StepFigures {
  double launch_s = std::nan("");  // launcher start to the first step
  // The job's own set-up, from `main` (or, chained or warm, from its turn) to its first step: what
  // a launch costs in a warm worker (docs/scheduler.md, "Warm launches"). NaN: not measured.
  double warm_launch_s = std::nan("");
  bool launched_warm =
      false;          // it ran in a warm worker: launch_s and tail_s are not a cold launch's (not stored)
  double warm_s = 0;  // the first `warm_steps` steps together (one-time costs)
  std::int64_t warm_steps = 0;
  // One steady step (alone the median, side by side the mean: FigureOptions), plus the loop's own share.
  double step_s = std::nan("");
  double eval_s = 0;        // one evaluation of the test split
  double checkpoint_s = 0;  // one epoch-end checkpoint
  double tail_s = 0;        // the runner's end until the launcher saw the exit
  std::int64_t steps_per_epoch = 0;
  // The calibration job's test accuracy after its `acc_steps` steps, and what it learned with
  // (learn_key: optimizer, lr and schedule). A job with the same learn_key whose target_accuracy
  // that accuracy already meets is predicted to stop at its first evaluation after acc_steps.
  double final_acc = std::nan("");
  std::int64_t acc_steps = 0;
  std::string learn_key;
  // The share (0-1) of the machine's CPU that went to other processes while it was measured
  // (base::outside_cpu_share, as a compare-by phase records it); NaN: not recorded.
  double other_cpu_share = std::nan("");
};
// What decides how a job learns (optimizer, lr, schedule, momentum, weight decay), as a key.
std::string learn_key(const jobs::JobParams& p);

// A group of configurations run side by side: the figures of each member while the others ran.
struct CalibrationGroup {
  std::vector<std::string> members;  // config keys, sorted (a multiset)
  std::map<std::string, StepFigures> figures;
};

// The LibTorch and gridrun builds a calibration job ran with (its job file's attributes).
struct BuildVersions {
  std::string torch;    // "1.13.0"
  std::string gridrun;  // "0.1.0 (7618bef09198)"
};

// The share of the CPU above which a calibration measurement is disturbed: run/prediction.hpp.
using run::kCalibrationLoadShare;

// The conditions a calibration was measured under: what `simulate` and `run` print beside the
// prediction, and what the report's cross-check reads when a run is faster than predicted.
struct CalibrationConditions {
  double max_other_cpu_share = std::nan("");  // the most disturbed measurement's; NaN: not recorded
  int repeated = 0;                           // measurements taken again because they were disturbed
  bool accepted_load = false;                 // a disturbed measurement kept on purpose (--accept-load)
};

struct Calibration {
  // Where: this host's name, or "slurm" for a calibration through Slurm on a cluster's nodes
  // (`gridrun calibrate --slurm`; used by `simulate --cluster`); with which binary (path, and
  // size + mtime as `build`).
  std::string host, train_bin, build;
  BuildVersions versions;
  std::string created;
  double cost_s = 0;                          // wall seconds the calibration took
  std::map<std::string, StepFigures> alone;   // by config key
  std::map<std::string, std::string> labels;  // by config key: "mlp cpu ranks=2 bpr=32"
  std::vector<CalibrationGroup> groups;
  CalibrationConditions conditions;
  // What read_calibration left out, one printable line each ("PATH: configs.KEY.step_s: missing;
  // that configuration is uncalibrated"): `simulate` and `run` print them as warnings.
  std::vector<std::string> warnings;
};

// The configuration of a job as far as its duration goes: its parameters with those that change
// only what is learned (lr, seed, schedule, ...) or how long it runs (epochs, max_steps) reset.
std::string config_key(const jobs::JobParams& p);
std::string config_label(const jobs::JobParams& p);
// Seconds from launch to exit of a job with parameters `p`, from its configuration's figures.
double predict_seconds(const jobs::JobParams& p, const StepFigures& f);

// A calibration job's parameters: `p` for its timing warm-up plus `steps` steps (or up to the
// job's first evaluation when it has a target_accuracy and that is within 4x as many steps), no
// target, no time limit, no profile; `seed` tells copies of one configuration apart.
jobs::JobParams calibration_params(const jobs::JobParams& p, std::int64_t steps, std::int64_t seed);

// How figures_from_file reads a calibration job.
struct FigureOptions {
  std::int64_t warmup_steps = 0;    // the job's timing warm-up
  double exit_unix = std::nan("");  // when its launcher saw it exit (NaN: unknown, tail 0)
  // The job ran beside others: its steady step is the mean, not the median. Alone, 20-odd steps
  // on a quiet machine, the median keeps one stray spike from weighing a twentieth of the sum;
  // side by side, the co-runners' preemptions (steps 10-30x the median, a few in a hundred) are
  // the cost being measured, and a makespan is their sum: the median under-predicted contended
  // Slurm pairs by 15-35 % (BENCHMARKS.md, "Predicting a grid before running it"). Steps a member
  // takes after its co-runners ended count too, as they did for the median.
  bool side_by_side = false;
  // The tail to take instead of exit_unix's (when finite): a job chained before others in one
  // process (--then-job) has no exit of its own, so it takes the process's, its last job's.
  double tail_s = std::nan("");
};

// The figures of a finished calibration job from its results file. nullopt with `why` set when it
// did not complete or lacks the timings; `versions` gets the builds it ran with.
std::optional<StepFigures> figures_from_file(const std::string& result_file, const FigureOptions& o,
                                             BuildVersions& versions, std::string& why);

// The processes that measure `configs` (one job's parameters per configuration) alone: indices
// into `configs`, one list per process key (jobs::process_key) in the order the keys first appear, the first
// of each launched and the rest chained after it. Why: the launch (mpirun, process start, library load,
// communicator) is the same for all of a process's configurations and was most of what
// calibration cost (a launch of 1-2 s against 20 steps of 0.1 s); measured once per launch
// key, each configuration's own launch is that plus its own set-up (data, model).
std::vector<std::vector<std::size_t>> plan_alone_processes(const std::vector<jobs::JobParams>& configs);

// The steps a job runs when its parameters say so (epochs x floor(train_samples / global batch),
// or max_steps, whichever is fewer); 0 when the data set's size decides.
std::int64_t known_steps(const jobs::JobParams& p);
// A configuration's timed steps: `steps`, but no more than its longest job (`longest`, from
// known_steps; 0: unknown) runs after its warm-up, and at least 3. Why: a calibration job that
// steps longer than the jobs it predicts measures nothing they will show, and for a grid of short
// jobs of a slow model those steps were a large part of the calibration (resnet18-small: 25
// steps calibrated for 8-step jobs).
std::int64_t capped_steps(std::int64_t steps, std::int64_t longest, std::int64_t warmup);

// One line when running the grid costs less than predicting it did ("" when not): a calibration of
// `calibration_s` seconds for a grid predicted at `grid_s`. Printed by `gridrun calibrate`, and by
// `gridrun simulate` when it predicts from that calibration.
std::string short_grid_note(double calibration_s, double grid_s, const std::string& grid);

// How a side-by-side group of calibrated configurations (`keys`, a multiset) is co-run, by local
// and Slurm calibration alike: each member's timed steps, about `train_s` at its alone speed (so the
// members overlap while they step, not only while they start) and at least `min_steps`; the
// longest member's expected seconds (for the budget); and a label. nullopt when a member was not
// calibrated alone.
struct GroupRun {
  std::vector<std::int64_t> steps;  // per member, in the order of `keys`
  double longest_s = 0;
  std::string label;  // "lenet cpu ranks=1 bpr=64 + mlp cpu ranks=1 bpr=64"
};
std::optional<GroupRun> plan_group_run(const Calibration& c, const std::vector<std::string>& keys,
                                       std::int64_t min_steps, double train_s);
// "calibrated on host-1 2026-11-28 15:02 UTC, other processes took at most 2 % of the CPU": the
// conditions line `simulate` and `run` print beside a prediction from `c`; a calibration kept under
// load says so and what it does to the prediction.
std::string describe_conditions(const Calibration& c);

// "launch 709.3 ms, step 3.8 ms, eval 2.1 ms": a configuration measured alone.
std::string describe_alone(const StepFigures& f);
// "lenet cpu ranks=1 bpr=64 step 6.2 ms (x0.92), launch 690.0 ms; ...": a measured group, each
// member's step against its alone step.
std::string describe_group(const Calibration& c, const CalibrationGroup& g);

// The largest figure read_calibration takes for one duration of a configuration (launch, step,
// evaluation, checkpoint, tail; seconds): a calibration runs each configuration for seconds to
// minutes, so even this (11.6 days) is generous; beyond it, a negative value, a non-number or a
// missing launch_s / step_s is a damaged entry (issue 45: a NaN step hung `simulate` and `run`).
constexpr double kMaxCalibratedSeconds = 1e6;
// The largest count it takes (steps per epoch, warm-up steps, steps to the final accuracy).
constexpr std::int64_t kMaxCalibratedCount = std::int64_t{1} << 40;

// The gridrun-train binary's identity: "SIZE-MTIME" of the file (a bare name: the first on PATH),
// "" when it cannot be read.
std::string build_fingerprint(const std::string& train_bin);
void write_calibration(const std::string& path, const Calibration& c);
// Reads and checks calibration.json completely. Throws std::runtime_error naming the path when the
// file as a whole is unusable (not JSON, not a calibration, no host or build); a bad entry (a
// figure missing, not a number, negative, beyond kMaxCalibratedSeconds) is left out with one line
// in `warnings` naming the file and key, so its configuration falls back to the cost model.
Calibration read_calibration(const std::string& path);

// The calibration of a run directory when it was made where the grid will run (this host, or
// through Slurm when `on_slurm`: `simulate --cluster`) with this gridrun-train, else nullptr with
// `why` set ("" when there is none at all).
std::unique_ptr<Calibration> usable_calibration(const std::string& run_dir, const std::string& train_bin,
                                                bool on_slurm, std::string& why);

}  // namespace gridrun::scheduler
