// Private to the runner: the clocks of the training loop (trainer.cpp), its step executor
// (step_executor.hpp) and its step recorder (step_recorder.hpp), in one place so the three agree
// on what is timed and how. Why a component of their own: the executor marks the parts of a step,
// the recorder resolves them when it writes the step's row, and the loop keeps the wall, epoch and
// checkpoint clocks; none of them owns the others.
//
// StepTimer: host clocks on CPU; CUDA events on GPU (host clocks around asynchronous kernels would
// measure launch time, not work). Each pending step has its own slot, resolved when its interval
// is written: resolving a CUDA event right after recording it would stall the host on the device.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace gridrun::runner {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The timed parts of one step, in the order they happen (not to be confused with a compare-by
// phase of a run, report/phases.hpp).
enum StepPart { kData, kForward, kBackward, kExposed, kOptimizer, kStep, kStepParts };

// mark(p) ends phase p of the current slot.
class StepTimer {
 public:
  explicit StepTimer(bool cuda) : cuda_(cuda) {}
  void start(std::size_t slot);
  void mark(StepPart p);
  // Part durations of a slot; kStep is the whole step (the others plus the flags exchange).
  std::array<double, kStepParts> resolve(std::size_t slot);

 private:
  struct Slot {
    std::array<double, kStepParts> t{};
#ifdef GRIDRUN_HAVE_NCCL
    std::array<at::cuda::CUDAEvent, kStepParts + 1> ev{
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault)};
#endif
  };
  bool cuda_;
  std::deque<Slot> slots_;  // deque: slots never move, cur_ stays valid while it grows
  Slot* cur_ = nullptr;
  Clock::time_point t0_, last_;
};

// Samples per second as a user's stopwatch sees it: host wall clock between synchronised points
// (the interval ends), launch gaps between steps included, from the first interval after the
// timing warm-up on.
struct WallThroughput {
  bool started = false;
  Clock::time_point t0, t1;
  double samples = 0;
  void add(double interval_samples);
  double per_s() const;  // NaN before two intervals
};

// The job's training wall time: earlier processes of this job (their checkpoint's wall_s) plus
// this one's since start().
class WallClock {
 public:
  void start(Clock::time_point now, double before) {
    start_ = now;
    before_ = before;
  }
  double seconds() const { return before_ + seconds_since(start_); }

 private:
  Clock::time_point start_{};
  double before_ = 0;
};

// The running epoch's start; its time so far counts into TrainState::epoch_s.
struct EpochClock {
  Clock::time_point start;
  double before;
  double seconds() const { return before + seconds_since(start); }
};

}  // namespace gridrun::runner
