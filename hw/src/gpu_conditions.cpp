// GPU conditions of a job (gpu_conditions.hpp): pure classification of NVML readings.
#include "gridrun/hw/gpu_conditions.hpp"

#include <algorithm>
#include <set>

namespace gridrun::hw {

std::string throttle_reason_names(unsigned long long reasons) {
  static const std::pair<unsigned long long, const char*> kNames[] = {
      {kClocksSwPowerCap, "power cap"},         {kClocksHwSlowdown, "hardware slowdown"},
      {kClocksSwThermal, "thermal (software)"}, {kClocksHwThermal, "thermal (hardware)"},
      {kClocksHwPowerBrake, "power brake"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

int count_foreign(const std::vector<unsigned>& listed, const std::vector<pid_t>& own,
                  const std::function<bool(pid_t)>& same_run) {
  auto is_own = [&](unsigned pid) {
    return std::find(own.begin(), own.end(), static_cast<pid_t>(pid)) != own.end();
  };
  if (std::none_of(listed.begin(), listed.end(), is_own)) return -1;
  std::set<unsigned> foreign;  // a process on two of the job's GPUs counts once
  for (unsigned pid : listed)
    if (!is_own(pid) && !(same_run && same_run(static_cast<pid_t>(pid)))) foreign.insert(pid);
  return static_cast<int>(foreign.size());
}

void GpuConditions::add(const GpuReading& r) {
  if (r.foreign >= 0) {
    ++process_samples_;
    shared_ += r.foreign > 0 ? 1 : 0;
    foreign_max_ = std::max(foreign_max_, r.foreign);
  }
  if (r.sm_clock_share >= 0) {
    ++clock_samples_;
    clock_sum_ += r.sm_clock_share;
  }
  if (r.reasons >= 0) {
    ++reason_samples_;
    const unsigned long long bits = throttling_bits(static_cast<unsigned long long>(r.reasons));
    throttled_ += bits ? 1 : 0;
    reasons_ |= bits;
  }
}

std::map<std::string, double> GpuConditions::summary() const {
  std::map<std::string, double> out;
  auto share = [](std::size_t part, std::size_t whole) {
    return static_cast<double>(part) / static_cast<double>(whole);
  };
  if (process_samples_ > 0) {
    out["gpu_foreign_procs_max"] = foreign_max_;
    out["gpu_foreign_share"] = share(shared_, process_samples_);
  }
  if (clock_samples_ > 0) out["gpu_sm_clock_share"] = clock_sum_ / static_cast<double>(clock_samples_);
  if (reason_samples_ > 0) {
    out["gpu_throttled_share"] = share(throttled_, reason_samples_);
    out["gpu_throttle_reasons"] = static_cast<double>(reasons_);
  }
  return out;
}

}  // namespace gridrun::hw
