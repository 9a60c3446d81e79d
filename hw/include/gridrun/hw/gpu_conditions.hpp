// The conditions a GPU job was measured under, from the utilization sampler's NVML readings: other
// compute processes on its GPUs (not its own ranks, not another job of the same run), the SM clock
// against its maximum, and the clocks' throttle reasons. The runner stores the figures in the
// results file's /summary (gpu_foreign_*, gpu_sm_clock_share, gpu_throttle*; docs/results.md), the
// report carries them to the phase and the verdict flags a phase whose GPUs were shared or slowed
// (docs/report.md, "Reading the verdict").
//
// Why a header of its own, without NVML: the classification is pure (tested with fabricated
// readings), and the report decodes the stored reason bits into words without the sampler.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gridrun::hw {

// NVML's clocks event (throttle) reason bits (nvmlClocksEventReason*, the same values as the older
// nvmlClocksThrottleReason*): the stored `gpu_throttle_reasons` is an OR of these.
inline constexpr unsigned long long kClocksGpuIdle = 0x1;
inline constexpr unsigned long long kClocksApplicationsSetting = 0x2;
inline constexpr unsigned long long kClocksSwPowerCap = 0x4;
inline constexpr unsigned long long kClocksHwSlowdown = 0x8;
inline constexpr unsigned long long kClocksSyncBoost = 0x10;
inline constexpr unsigned long long kClocksSwThermal = 0x20;
inline constexpr unsigned long long kClocksHwThermal = 0x40;
inline constexpr unsigned long long kClocksHwPowerBrake = 0x80;
inline constexpr unsigned long long kClocksDisplaySetting = 0x100;
// The reasons that mean the GPU ran slower than asked because of heat, power or a hardware
// slowdown. Idle, the applications-clocks and display-clock settings and sync boost are benign:
// they say what the clocks were set to, not that something took speed away.
inline constexpr unsigned long long kThrottlingReasons =
    kClocksSwPowerCap | kClocksHwSlowdown | kClocksSwThermal | kClocksHwThermal | kClocksHwPowerBrake;

// The throttling bits of a reading (0: not throttled).
inline unsigned long long throttling_bits(unsigned long long reasons) { return reasons & kThrottlingReasons; }
// "power cap, thermal (software)" for the throttling bits of `reasons`, in bit order; "" for none.
std::string throttle_reason_names(unsigned long long reasons);

// The compute processes NVML lists on a job's GPUs in one sample, classified. -1: unknown, when the
// list holds none of the job's own ranks (NVML unsupported, the ranks have no CUDA context yet, or
// NVML's PIDs are another PID namespace's, as in a container: then no PID can be told apart).
// `same_run(pid)` says whether a process that is not one of `own` belongs to the same run (a
// jobs_per_gpu neighbour): those are not foreign either.
int count_foreign(const std::vector<unsigned>& listed, const std::vector<pid_t>& own,
                  const std::function<bool(pid_t)>& same_run);

// One sample's conditions over the job's GPUs (NaN / -1 where NVML did not answer).
struct GpuReading {
  int foreign = -1;            // count_foreign over all its GPUs' processes
  double sm_clock_share = -1;  // mean over its GPUs of SM clock / max SM clock (< 0: unknown)
  long long reasons = -1;      // OR over its GPUs of the clocks event reasons (< 0: unknown)
};

// The figures over a job's samples.
class GpuConditions {
 public:
  void add(const GpuReading& r);
  // The /summary figures, each only when measured: gpu_foreign_procs_max, gpu_foreign_share (share
  // of the samples with a known process list that had a foreign one), gpu_sm_clock_share (mean),
  // gpu_throttled_share (share of the samples with a known reason that had a throttling one) and
  // gpu_throttle_reasons (the throttling bits seen, OR'ed).
  std::map<std::string, double> summary() const;

 private:
  std::size_t process_samples_ = 0, shared_ = 0, reason_samples_ = 0, throttled_ = 0, clock_samples_ = 0;
  int foreign_max_ = 0;
  unsigned long long reasons_ = 0;
  double clock_sum_ = 0;
};

}  // namespace gridrun::hw
