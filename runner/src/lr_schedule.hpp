// Learning-rate schedules: a pure function of the global step, so resuming needs only the step
// (no hidden scheduler state to checkpoint) and every rank agrees by construction.
//   constant: base;  step: base * 0.1^(floor(epoch_progress / (total/3)))  (decay x0.1 at 1/3 and
//   2/3 of training);  cosine: base * 0.5 * (1 + cos(pi * t / T)) over the post-warm-up steps.
//   Linear warm-up from base/warmup to base over the first warmup_steps steps (all schedules).
//   scale_lr: base = lr * global_batch / 256 (Goyal et al. linear scaling rule).
#pragma once

#include <cstdint>
#include <string>

namespace gridrun::runner {

struct ScheduleOptions {
  std::string kind = "constant";  // constant | step | cosine
  double base_lr = 0.1;
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;  // steps of the whole run (epochs * steps_per_epoch or max_steps)
};

class LrSchedule {
 public:
  explicit LrSchedule(ScheduleOptions o);  // throws BadInput on an unknown kind
  double lr_at(std::int64_t step) const;   // step is 0-based

 private:
  ScheduleOptions o_;
};

}  // namespace gridrun::runner
