// Operator profiles for `profile_steps`: LibTorch's profiler records every operator (RecordFunction
// range) of a window of steps; the ranges are aggregated per operator name into the rows of the
// results file's /profile and kept as a Chrome trace.
//
// Why the legacy profiler API (torch::autograd::profiler::enableProfilerLegacy): Debian's LibTorch
// 1.13 is built without kineto, and the legacy API needs nothing else; it works in every LibTorch
// 1.x/2.x build. It reports push/pop ranges per thread; self time = the range minus its direct
// child ranges on the same thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/results/writer.hpp"

namespace gridrun::runner {

class OpProfiler {
 public:
  // `device`: also record CUDA events (device times); CPU runs report device times of 0.
  explicit OpProfiler(bool device) : device_(device) {}
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Starts recording on the calling thread (and the autograd threads it drives). Recording
  // windows may be started and stopped repeatedly; figures add up.
  void start();
  // Stops recording and folds the recorded ranges into the per-operator figures and the trace.
  void stop();
  bool active() const { return active_; }
  bool empty() const { return ops_.empty(); }

  // Per operator name, sorted by self CPU time (largest first); times in microseconds summed over
  // all recorded windows.
  std::vector<results::OpProfile> ops() const;
  // Chrome trace-event JSON ({"traceEvents": [{"name","ph":"X","ts","dur","pid","tid"}, ...]}),
  // ts in microseconds from the first recorded range; written atomically (base::write_file_atomic).
  void write_chrome_trace(const std::string& path, int pid) const;

 private:
  struct Span {
    std::string name;
    double ts_us, dur_us;
    std::uint64_t tid;
  };
  bool device_;
  bool active_ = false;
  std::vector<results::OpProfile> ops_;
  std::vector<Span> spans_;
};

}  // namespace gridrun::runner
