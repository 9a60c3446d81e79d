// Private to the runner: StepRecorder, what the training loop (trainer.cpp) records of its steps:
// the /steps rows, the interval metrics behind them, the epoch rows, the progress lines, the
// divergence check and the timing figures of /summary.
//
// Why nothing in a step waits for the device: a step's loss and correct count stay on the device
// and its part times are CUDA events (clocks.hpp); the recorder reads them once per --log-every
// interval (and whenever the loop drains it: epoch end, signals, checkpoints), when the interval's
// rows are written. /steps rows keep their meaning (one row per step, the global mean loss of that
// step); only the moment they are computed moves. Per-rank part times are gathered to rank 0 at the
// same time, so straggler figures cost one small gather per interval, not per step. Why a type of
// its own: it owns every row and figure the loop writes, and nothing that changes the weights
// (step_executor.hpp) or decides when the loop stops, apart from reporting a divergence.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "clocks.hpp"
#include "gridrun/results/writer.hpp"
#include "job_harness.hpp"

namespace gridrun::runner {

struct RecorderOptions {
  std::int64_t total_steps = 0, total_epochs = 0;  // of the job, for the progress lines
  const WallClock* wall = nullptr;                 // the job's wall time (rows' wall_s); required
};

// One step as the recorder queues it.
struct StepRecord {
  at::Tensor loss, correct;  // this rank's mean loss and correct predictions (device scalars)
  std::int64_t samples = 0;  // this rank's samples
  double comm_s = 0;         // the step's gradient reductions (GradSyncStats::comm_s)
};

class StepRecorder : private LoopBase {
 public:
  StepRecorder(JobHarness& h, const RecorderOptions& ro);

  // The timer of the step about to run (its slot is the step's place in the pending interval).
  StepTimer& begin_step();
  // After the step: queues its row (step and epoch from `st`, which has counted the step), writes
  // the interval when --log-every steps are pending, and flushes the file at most every 30 s.
  void record(const StepRecord& r, TrainState& st);
  // Collective: writes the pending steps and adds them to `st`'s epoch sums.
  void drain(TrainState& st);
  // Rank 0: the results file's buffered rows to disk. Restarts the 30 s flush clock on every rank.
  void flush();
  void start_flush_clock(Clock::time_point now) { last_flush_ = now; }
  // Rank 0: the epoch row of `st`'s running epoch (its sums; epoch_s as set by the caller).
  void write_epoch_row(const TrainState& st, double test_loss, double test_acc);

  // The reason the training loss diverged ("" while it is sane); identical on every rank.
  const std::string& diverged() const { return diverged_; }
  // Rank 0: flops_per_s (from the model's forward flops per sample), samples_per_s_wall and
  // rank_max_step_s_mean of /summary.
  void summarize(results::Summary& s, double flops_per_sample) const;

 private:
  // Rank 0's step rows wait here until the per-rank timings of their interval are gathered.
  // Every rank keeps its steps' device-side loss and correct count and host-side sample count;
  // rank 0 also keeps the rows' host-side fields.
  struct PendingRows {
    std::vector<results::StepRow> rows;  // rank 0: step, epoch, wall_s, comm_s
    std::vector<at::Tensor> loss;        // this rank's mean loss of the step (device scalar)
    std::vector<at::Tensor> correct;     // this rank's correct predictions (device scalar)
    std::vector<double> n;               // this rank's samples
    std::size_t size() const { return n.size(); }
    void clear() {
      rows.clear();
      loss.clear();
      correct.clear();
      n.clear();
    }
  };

  std::vector<double> interval_metrics();
  void write_rows(const std::vector<double>& red, const std::vector<std::array<double, kStepParts>>& times,
                  const std::vector<double>& all);
  void check_divergence(const std::vector<double>& red, std::int64_t first_step);

  const RecorderOptions ro_;
  StepTimer timer_;
  PendingRows pending_;
  Clock::time_point last_flush_;
  std::vector<double> rank_max_step_s_;
  double timing_samples_ = 0, timing_time_ = 0;
  WallThroughput wall_tp_;
  // Divergence (run/exit_codes.hpp): decided on the all-reduced loss, so every rank stops at the
  // same step. `high_steps_` counts consecutive steps above kDivergedLoss.
  std::int64_t high_steps_ = 0;
  std::string diverged_;
};

}  // namespace gridrun::runner
