// UtilReader and UtilSampler (see util_sampler.hpp). /proc parsing is hand-written and allocation-light
// because it runs 10 times a second beside training; NVML comes from the one loader, hw/nvml.hpp.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/hw/util_sampler.hpp"
#include "gridrun/hw/visible_devices.hpp"

namespace gridrun::hw {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Reads a small /proc file into buf (NUL-terminated); false if it cannot be read.
bool read_small(const char* path, char* buf, std::size_t size) {
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  std::size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return n > 0;
}

// utime + stime in clock ticks from /proc/<pid>/stat; < 0 if unreadable.
double proc_ticks(pid_t pid) {
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  if (!read_small(path, buf, sizeof buf)) return -1;
  const char* p = std::strrchr(buf, ')');  // comm may contain spaces and parentheses
  if (!p) return -1;
  p += 2;  // now at field 3 (state)
  for (int field = 3; field < 14 && *p; ++field) {
    p = std::strchr(p, ' ');
    if (!p) return -1;
    ++p;
  }
  char* end = nullptr;
  double utime = std::strtod(p, &end);
  double stime = std::strtod(end, nullptr);
  return utime + stime;
}

double proc_rss_bytes(pid_t pid, long page_size) {
  char path[64], buf[256];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  if (!read_small(path, buf, sizeof buf)) return kNaN;
  char* end = nullptr;
  std::strtoull(buf, &end, 10);  // size
  unsigned long long resident = std::strtoull(end, nullptr, 10);
  return static_cast<double>(resident) * static_cast<double>(page_size);
}

// NVML's devices in its own (PCI bus) order, with their UUIDs and names.
struct NvmlDevices {
  std::vector<GpuInfo> info;
  std::vector<nvml::Device> handles;
};
NvmlDevices list_devices(const Nvml& lib, unsigned n) {
  NvmlDevices all;
  for (unsigned i = 0; i < n; ++i) {
    nvml::Device d = nullptr;
    if (lib.by_index(i, &d) != 0) continue;
    GpuInfo g;
    g.nvml_index = i;
    char buf[96] = {0};
    if (lib.uuid(d, buf, sizeof buf) == 0) g.uuid = buf;
    char nbuf[96] = {0};
    if (lib.name(d, nbuf, sizeof nbuf) == 0) g.name = nbuf;
    all.info.push_back(g);
    all.handles.push_back(d);
  }
  return all;
}

// Appends the device(s) one CUDA_VISIBLE_DEVICES entry names (an index, a UUID prefix, or a MIG
// instance NVML finds by its UUID) to `out`; false when it names none.
bool select_entry(const Nvml& lib, const NvmlDevices& all, const std::string& item, NvmlDevices& out) {
  bool found = false;
  if (item.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    const unsigned long long idx = std::strtoull(item.c_str(), nullptr, 10);
    if (errno == ERANGE) return false;  // beyond any device index
    for (std::size_t k = 0; k < all.info.size(); ++k)
      if (all.info[k].nvml_index == idx) {
        out.info.push_back(all.info[k]);
        out.handles.push_back(all.handles[k]);
        found = true;
      }
    return found;
  }
  for (std::size_t k = 0; k < all.info.size(); ++k)
    if (all.info[k].uuid.rfind(item, 0) == 0) {
      out.info.push_back(all.info[k]);
      out.handles.push_back(all.handles[k]);
      return true;
    }
  nvml::Device d = nullptr;
  if (!lib.by_uuid || lib.by_uuid(item.c_str(), &d) != 0) return false;
  GpuInfo g;
  g.nvml_index = std::numeric_limits<unsigned>::max();
  g.uuid = item;
  g.name = "MIG device";
  out.info.push_back(g);
  out.handles.push_back(d);
  return true;
}

}  // namespace

UtilReader::UtilReader(const UtilReaderOptions& opts)
    : pids_(opts.pids), t0_(opts.t0), same_run_env_(opts.same_run_env) {
  if (pids_.empty()) pids_.push_back(getpid());
  clock_ticks_ = sysconf(_SC_CLK_TCK);
  page_size_ = sysconf(_SC_PAGESIZE);
  for (pid_t p : pids_) prev_proc_s_.push_back(proc_ticks(p) / static_cast<double>(clock_ticks_));
  base::node_cpu_ticks(prev_node_busy_, prev_node_total_);
  prev_t_ = std::chrono::steady_clock::now();
  if (!opts.gpus) {
    gpu_absent_reason_ = "cpu job";
    return;
  }
  nvml_ = std::make_unique<Nvml>(opts.nvml_library);
  gpu_absent_reason_ = nvml_->error();
  if (gpu_absent_reason_.empty() && (!nvml_->by_index || !nvml_->uuid || !nvml_->name))
    gpu_absent_reason_ = "NVML library lacks required symbols";
  if (!gpu_absent_reason_.empty()) {
    nvml_.reset();
    return;
  }
  const unsigned n = nvml_->device_count().value_or(0);
  NvmlDevices all = list_devices(*nvml_, n);
  const std::optional<std::vector<std::string>> visible =
      opts.visible_devices.empty() ? visible_devices_from_env() : parse_visible_devices(opts.visible_devices);
  NvmlDevices chosen;
  if (!visible) {
    chosen = std::move(all);
  } else {
    // An entry CUDA cannot resolve ends CUDA's device list: do the same.
    for (const auto& item : *visible)
      if (!select_entry(*nvml_, all, item, chosen)) break;
  }
  gpus_ = std::move(chosen.info);
  devices_ = std::move(chosen.handles);
  if (gpus_.empty()) {
    gpu_absent_reason_ = n == 0 ? "NVML found no GPU" : "no GPU selected by CUDA_VISIBLE_DEVICES";
    nvml_.reset();
    devices_.clear();
  }
  max_sm_mhz_.assign(gpus_.size(), 0);
  own_seen_.assign(gpus_.size(), false);
}

// Whether `pid` carries one of the same-run environment entries (/proc/PID/environ: readable for
// this user's processes; another user's is never of the same run). Read once per PID.
bool UtilReader::same_run(pid_t pid) {
  if (same_run_env_.empty()) return false;
  if (auto it = same_run_seen_.find(pid); it != same_run_seen_.end()) return it->second;
  const std::string env =
      base::try_read_file("/proc/" + std::to_string(pid) + "/environ", base::kinds::kProcFile)
          .value_or(std::string());
  bool found = false;
  std::size_t start = 0;
  while (!found && start < env.size()) {
    std::size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    const std::string_view entry(env.data() + start, end - start);
    for (const auto& e : same_run_env_) found = found || entry == e;
    start = end + 1;
  }
  return same_run_seen_[pid] = found;
}

// Foreign processes, SM clock share and throttle reasons over the job's GPUs (gpu_conditions.hpp),
// from this sample's process lists (`listed`: the PIDs on all of them; `listed_all`: every list read).
GpuReading UtilReader::read_conditions(const std::vector<unsigned>& listed, bool listed_all) {
  GpuReading r;
  double clock_sum = 0;
  std::size_t clocks = 0;
  unsigned long long reasons = 0;
  bool reasons_all = true;
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    nvml::Device d = devices_[k];
    unsigned mhz = 0;
    if (max_sm_mhz_[k] == 0 && nvml_->max_clock) nvml_->max_clock(d, nvml::kClockSm, &max_sm_mhz_[k]);
    if (max_sm_mhz_[k] > 0 && nvml_->clock && nvml_->clock(d, nvml::kClockSm, &mhz) == 0) {
      clock_sum += static_cast<double>(mhz) / max_sm_mhz_[k];
      ++clocks;
    }
    unsigned long long bits = 0;
    if (nvml_->reasons && nvml_->reasons(d, &bits) == 0)
      reasons |= bits;
    else
      reasons_all = false;
  }
  if (listed_all) r.foreign = count_foreign(listed, pids_, [this](pid_t p) { return same_run(p); });
  if (clocks > 0) r.sm_clock_share = clock_sum / static_cast<double>(clocks);
  if (reasons_all) r.reasons = static_cast<long long>(reasons);
  return r;
}

// Whether a GPU process is the job's: one of `pids_` or a descendant of one (a launcher script's
// python, a DataLoader worker). Walks up at most 8 parents, once per PID (the answer is kept, as
// same_run's: the sampler asks 10 times a second about the same few processes).
bool UtilReader::is_own(pid_t pid) {
  if (auto it = own_pid_seen_.find(pid); it != own_pid_seen_.end()) return it->second;
  bool own = false;
  pid_t p = pid;
  for (int depth = 0; depth < 8 && p > 1 && !own; ++depth) {
    own = std::find(pids_.begin(), pids_.end(), p) != pids_.end();
    p = static_cast<pid_t>(base::parent_of(static_cast<int>(p)));
  }
  return own_pid_seen_[pid] = own;
}

UtilReader::~UtilReader() = default;
static_assert(!std::is_copy_constructible_v<UtilReader> && !std::is_copy_assignable_v<UtilReader>);

UtilSample UtilReader::sample() {
  UtilSample row;
  auto now = std::chrono::steady_clock::now();
  row.time_s = std::chrono::duration<double>(now - t0_).count();
  double dt = std::chrono::duration<double>(now - prev_t_).count();
  prev_t_ = now;
  row.rank_cpu_pct.resize(pids_.size());
  row.rank_rss_bytes.resize(pids_.size());
  for (std::size_t k = 0; k < pids_.size(); ++k) {
    double ticks = proc_ticks(pids_[k]);
    double s = ticks < 0 ? kNaN : ticks / static_cast<double>(clock_ticks_);
    double prev = prev_proc_s_[k];
    row.rank_cpu_pct[k] = (ticks < 0 || prev < 0 || dt <= 0) ? kNaN : 100.0 * (s - prev) / dt;
    prev_proc_s_[k] = ticks < 0 ? -1 : s;
    row.rank_rss_bytes[k] = proc_rss_bytes(pids_[k], page_size_);
  }
  double busy = 0, total = 0;
  if (base::node_cpu_ticks(busy, total) && total > prev_node_total_) {
    row.node_cpu_pct = 100.0 * (busy - prev_node_busy_) / (total - prev_node_total_);
    prev_node_busy_ = busy;
    prev_node_total_ = total;
  } else {
    row.node_cpu_pct = kNaN;
  }
  if (nvml_) {
    std::size_t n = devices_.size();
    row.gpu_util_pct.assign(n, kNaN);
    row.gpu_mem_bytes.assign(n, kNaN);
    row.gpu_power_w.assign(n, kNaN);
    row.gpu_energy_j.assign(n, kNaN);
    row.gpu_temp_c.assign(n, kNaN);
    row.gpu_sm_mhz.assign(n, kNaN);
    std::vector<unsigned> listed;
    bool listed_all = true;
    std::vector<nvml::GpuProcess> procs;
    for (std::size_t k = 0; k < n; ++k) {
      nvml::Device d = devices_[k];
      nvml::Utilization u{};
      if (nvml_->util && nvml_->util(d, &u) == 0) row.gpu_util_pct[k] = u.gpu;
      // Memory: the job's own processes' where NVML lists them (a GPU shared with other jobs,
      // jobs_per_gpu, holds theirs too), once one of them was seen on this device; before that,
      // and where NVML lists none of them (another PID namespace), the device's used memory.
      procs.clear();
      const bool ok = nvml_->processes(d, procs);
      listed_all = ok && listed_all;
      double own_bytes = 0;
      bool own_here = false;
      for (const auto& p : procs) {
        listed.push_back(p.pid);
        if (is_own(static_cast<pid_t>(p.pid))) {
          own_here = true;
          own_bytes += static_cast<double>(p.used_bytes);
        }
      }
      own_seen_[k] = own_seen_[k] || own_here;
      nvml::Memory m{};
      if (ok && own_seen_[k])
        row.gpu_mem_bytes[k] = own_bytes;
      else if (nvml_->memory && nvml_->memory(d, &m) == 0)
        row.gpu_mem_bytes[k] = static_cast<double>(m.used);
      unsigned mw = 0;
      if (nvml_->power && nvml_->power(d, &mw) == 0) row.gpu_power_w[k] = mw / 1000.0;
      unsigned long long mj = 0;
      if (nvml_->energy && nvml_->energy(d, &mj) == 0) row.gpu_energy_j[k] = static_cast<double>(mj) / 1000.0;
      unsigned t = 0;
      if (nvml_->temperature && nvml_->temperature(d, nvml::kTemperatureGpu, &t) == 0) row.gpu_temp_c[k] = t;
      unsigned mhz = 0;
      if (nvml_->clock && nvml_->clock(d, nvml::kClockSm, &mhz) == 0) row.gpu_sm_mhz[k] = mhz;
    }
    conditions_.add(read_conditions(listed, listed_all));
  }
  return row;
}

UtilSampler::UtilSampler(std::unique_ptr<UtilReader> reader, const SamplerOptions& opts, Sink sink)
    : reader_(std::move(reader)), opts_(opts), sink_(std::move(sink)) {
  if (!reader_) throw std::invalid_argument("UtilSampler: no reader");
  if (!(opts_.hz > 0 && opts_.hz <= 1000))
    throw std::invalid_argument("UtilSampler: rate must be in (0, 1000] Hz, got " + std::to_string(opts_.hz));
  thread_ = std::thread([this] { loop(); });
}

UtilSampler::~UtilSampler() { stop(); }

void UtilSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t UtilSampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

std::string UtilSampler::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void UtilSampler::loop() {
  auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(1.0 / opts_.hz));
  auto next = std::chrono::steady_clock::now() + period;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The pacing wait: wakes at the next sample time or at once on stop().
      if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
    }
    try {
      UtilSample row = reader_->sample();
      sink_(row);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = e.what();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++samples_;
    }
    next += period;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // fell behind (suspended): do not burst
  }
}

}  // namespace gridrun::hw
