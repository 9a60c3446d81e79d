// The training loop's clocks (clocks.hpp says why they are one component). On a CPU build this file
// includes no LibTorch header; the CUDA events are compiled only with GRIDRUN_HAVE_NCCL.
#include "clocks.hpp"

#include <limits>

namespace gridrun::runner {

void StepTimer::start(std::size_t slot) {
  if (slots_.size() <= slot) slots_.resize(slot + 1);
  cur_ = &slots_[slot];
  t0_ = last_ = Clock::now();
#ifdef GRIDRUN_HAVE_NCCL
  if (cuda_) cur_->ev[kStepParts].record();
#endif
}

void StepTimer::mark(StepPart p) {
#ifdef GRIDRUN_HAVE_NCCL
  if (cuda_) {
    cur_->ev[p].record();
    return;
  }
#endif
  auto now = Clock::now();
  if (p == kStep) {
    cur_->t[kStep] = std::chrono::duration<double>(now - t0_).count();
  } else {
    cur_->t[p] = std::chrono::duration<double>(now - last_).count();
  }
  last_ = now;
}

std::array<double, kStepParts> StepTimer::resolve(std::size_t slot) {
  Slot& s = slots_.at(slot);
#ifdef GRIDRUN_HAVE_NCCL
  if (cuda_) {
    s.ev[kStep].synchronize();
    at::cuda::CUDAEvent* prev = &s.ev[kStepParts];
    for (int p = 0; p <= kOptimizer; ++p) {
      s.t[p] = prev->elapsed_time(s.ev[p]) / 1000.0;
      prev = &s.ev[p];
    }
    s.t[kStep] = s.ev[kStepParts].elapsed_time(s.ev[kStep]) / 1000.0;
  }
#endif
  return s.t;
}

void WallThroughput::add(double interval_samples) {
  const auto now = Clock::now();
  if (!started) {
    started = true;
    t0 = now;
  } else {
    samples += interval_samples;
    t1 = now;
  }
}

double WallThroughput::per_s() const {
  return samples > 0 ? samples / std::chrono::duration<double>(t1 - t0).count()
                     : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace gridrun::runner
