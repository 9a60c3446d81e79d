// Operator profiler (see op_profiler.hpp for why the legacy profiler API).
#include "op_profiler.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"

namespace gridrun::runner {

namespace prof = torch::autograd::profiler;

OpProfiler::~OpProfiler() {
  if (active_) {
    try {
      prof::disableProfilerLegacy();
    } catch (...) {
    }
  }
}

void OpProfiler::start() {
  if (active_) return;
  prof::enableProfilerLegacy(
      prof::ProfilerConfig(device_ ? prof::ProfilerState::CUDA : prof::ProfilerState::CPU));
  active_ = true;
}

void OpProfiler::stop() {
  if (!active_) return;
  active_ = false;
  prof::thread_event_lists lists = prof::disableProfilerLegacy();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < ops_.size(); ++i) index[ops_[i].name] = i;
  struct Open {
    const prof::LegacyEvent* push;
    double child_cpu = 0, child_dev = 0;
  };
  for (const auto& list : lists) {
    std::vector<Open> stack;
    for (const auto& e : list) {
      if (e.kind() == prof::EventKind::PushRange) {
        stack.push_back(Open{&e});
        continue;
      }
      if (e.kind() != prof::EventKind::PopRange) continue;
      // Ranges nest per thread; a pop closes the innermost open range with its handle.
      auto it = std::find_if(stack.rbegin(), stack.rend(),
                             [&](const Open& o) { return o.push->handle() == e.handle(); });
      if (it == stack.rend()) continue;
      const Open open = *it;
      stack.erase(std::next(it).base(), stack.end());
      const double cpu = open.push->cpuElapsedUs(e);
      double dev = 0;
      if (device_ && open.push->hasCuda() && e.hasCuda()) dev = open.push->cudaElapsedUs(e);
      if (!stack.empty()) {
        stack.back().child_cpu += cpu;
        stack.back().child_dev += dev;
      }
      const std::string name = open.push->name();
      auto [pos, inserted] = index.emplace(name, ops_.size());
      if (inserted) ops_.push_back(results::OpProfile{name});
      auto& op = ops_[pos->second];
      op.calls += 1;
      op.total_cpu_us += cpu;
      op.self_cpu_us += std::max(0.0, cpu - open.child_cpu);
      op.total_device_us += dev;
      op.self_device_us += std::max(0.0, dev - open.child_dev);
      spans_.push_back(Span{name, open.push->cpuUs(), cpu, open.push->threadId()});
    }
  }
  std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) { return a.ts_us < b.ts_us; });
}

std::vector<results::OpProfile> OpProfiler::ops() const {
  auto r = ops_;
  std::sort(r.begin(), r.end(), [](const results::OpProfile& a, const results::OpProfile& b) {
    return a.self_cpu_us > b.self_cpu_us;
  });
  return r;
}

void OpProfiler::write_chrome_trace(const std::string& path, int pid) const {
  // Microseconds to 3 decimals (nanoseconds): what the legacy profiler's clock resolves.
  const auto us = [](double v) { return std::round(v * 1000.0) / 1000.0; };
  const double t0 = spans_.empty() ? 0 : spans_.front().ts_us;
  base::Json events = base::Json::array();
  for (const auto& s : spans_)
    events.push_back(base::Json{{"name", s.name},
                                {"ph", "X"},
                                {"ts", us(s.ts_us - t0)},
                                {"dur", us(s.dur_us)},
                                {"pid", pid},
                                {"tid", s.tid}});
  const base::Json trace{{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  // Operator names are ASCII; `replace` keeps a stray byte from failing the job at its end.
  base::write_file_atomic(path, trace.dump(-1, ' ', false, base::Json::error_handler_t::replace) + "\n");
}

}  // namespace gridrun::runner
