// Operator profiler (see op_profiler.hpp for why the legacy profiler API).
#include "op_profiler.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "gridrun/jobs/json.hpp"

namespace gridrun::runner {

namespace prof = torch::autograd::profiler;

namespace {

using jobs::json_escape;

}  // namespace

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
  std::sort(spans_.begin(), spans_.end(),
            [](const Span& a, const Span& b) { return a.ts_us < b.ts_us; });
}

std::vector<results::OpProfile> OpProfiler::ops() const {
  auto r = ops_;
  std::sort(r.begin(), r.end(), [](const results::OpProfile& a, const results::OpProfile& b) {
    return a.self_cpu_us > b.self_cpu_us;
  });
  return r;
}

void OpProfiler::write_chrome_trace(const std::string& path, int pid) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write profile trace " + tmp);
    const double t0 = spans_.empty() ? 0 : spans_.front().ts_us;
    out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
    char buf[160];
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      const auto& s = spans_[i];
      std::snprintf(buf, sizeof buf,
                    "\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%llu}",
                    s.ts_us - t0, s.dur_us, pid, static_cast<unsigned long long>(s.tid));
      out << (i ? ",\n" : "\n") << "{\"name\":\"" << json_escape(s.name) << buf;
    }
    out << "\n]}\n";
    if (!out) throw std::runtime_error("short write to profile trace " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace gridrun::runner
