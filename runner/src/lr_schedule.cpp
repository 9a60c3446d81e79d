// Learning-rate schedules (see lr_schedule.hpp for the formulas and why they are stateless).
#include "lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

LrSchedule::LrSchedule(ScheduleOptions o) : o_(std::move(o)) {
  if (o_.kind != "constant" && o_.kind != "step" && o_.kind != "cosine")
    throw BadInput("gridrun-train: unknown lr_schedule '" + o_.kind + "' (known: constant, step, cosine)");
  o_.total_steps = std::max<std::int64_t>(1, o_.total_steps);
}

double LrSchedule::lr_at(std::int64_t step) const {
  const double base = o_.base_lr;
  if (o_.warmup_steps > 0 && step < o_.warmup_steps)
    return base * static_cast<double>(step + 1) / static_cast<double>(o_.warmup_steps);
  if (o_.kind == "constant") return base;
  const std::int64_t span = std::max<std::int64_t>(1, o_.total_steps - o_.warmup_steps);
  const double t =
      std::clamp(static_cast<double>(step - o_.warmup_steps) / static_cast<double>(span), 0.0, 1.0);
  if (o_.kind == "step") return base * std::pow(0.1, std::floor(std::min(t, 0.999999) * 3.0));
  return base * 0.5 * (1.0 + std::cos(M_PI * t));
}

}  // namespace gridrun::runner
