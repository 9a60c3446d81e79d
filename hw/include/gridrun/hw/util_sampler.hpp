// Utilization sampling for a results file's /util (results/ only stores the samples): per-rank
// process CPU % and RSS from /proc, node CPU % from /proc/stat, and per-GPU figures from NVML.
// A GPU's memory is the job's own processes' (the sampled PIDs and their descendants, from NVML's
// process list), so two jobs sharing a GPU (jobs_per_gpu) each record their own; utilization,
// power and clocks are the device's (NVML has no per-process power).
//
// NVML comes from hw/nvml.hpp (dlopen: `gridrun` and `gridrun-train` must build and run on machines
// without a GPU driver); when it is missing, GPU columns are absent and gpu_absent_reason() says
// why (it goes into the file as /util's `gpu_absent_reason`). Which GPUs are sampled follows
// CUDA_VISIBLE_DEVICES as visible_devices.hpp parses it.
//
// GPU jobs also record the conditions they ran under (gpu_conditions.hpp): other compute processes
// on their GPUs, the SM clock against its maximum and the clocks' throttle reasons, summed over the
// samples in gpu_conditions() for the results file's /summary.
//
// Two objects: UtilReader takes one sample when asked (the runner creates it first, because the
// JobWriter needs gpu_count() before the file exists), UtilSampler owns a reader and a thread that
// calls a sink at a fixed rate until destroyed (RAII: the destructor stops and joins).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gridrun/hw/gpu_conditions.hpp"
#include "gridrun/hw/nvml.hpp"
#include "gridrun/hw/util_sample.hpp"

namespace gridrun::hw {

struct UtilReaderOptions {
  std::vector<pid_t> pids;  // local processes sampled as ranks; empty = this process
  bool gpus = true;         // false: never touch NVML (cpu jobs)
  // Devices to sample, as CUDA_VISIBLE_DEVICES spells them (indices or GPU-/MIG- UUID prefixes);
  // empty = read the CUDA_VISIBLE_DEVICES environment variable; unset there too = all devices.
  std::string visible_devices;
  std::string nvml_library = nvml::kLibrary;  // tests point this at a missing file or a test double
  // Environment entries ("NAME=value") that mark a process of the same run (the launch token of
  // `gridrun run`, SLURM_JOB_ID of a Slurm allocation): a GPU process that is not one of `pids` but
  // carries one of them is a neighbour of the run (jobs_per_gpu), not a foreign one.
  std::vector<std::string> same_run_env;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();  // time_s origin
};

struct GpuInfo {
  unsigned nvml_index = 0;
  std::string name, uuid;
};

// Not copyable: it owns the loaded NVML library (hw::Nvml, closed by ~UtilReader).
class UtilReader {
 public:
  explicit UtilReader(const UtilReaderOptions& opts);
  ~UtilReader();

  // One row. CPU % are averages since the previous call (the first call: since construction);
  // a rank's CPU % is like top's (100 = one core busy), node CPU % is of all cores (0-100).
  // Values that cannot be read (process gone, counter unsupported) are NaN.
  UtilSample sample();

  int rank_count() const { return static_cast<int>(pids_.size()); }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  const std::vector<GpuInfo>& gpus() const { return gpus_; }
  const std::string& gpu_absent_reason() const { return gpu_absent_reason_; }
  // The conditions over every sample so far (GPU jobs; empty figures otherwise). Not synchronised:
  // read it after the sampler that owns this reader has stopped.
  const GpuConditions& gpu_conditions() const { return conditions_; }

 private:
  GpuReading read_conditions(const std::vector<unsigned>& listed, bool listed_all);
  bool same_run(pid_t pid);
  bool is_own(pid_t pid);
  std::vector<pid_t> pids_;
  std::vector<double> prev_proc_s_;  // utime+stime seconds per pid at the previous sample
  double prev_node_busy_ = 0, prev_node_total_ = 0;
  std::chrono::steady_clock::time_point t0_, prev_t_;
  std::unique_ptr<Nvml> nvml_;         // null: no GPU sampled (gpu_absent_reason_ says why)
  std::vector<nvml::Device> devices_;  // the sampled GPUs' handles, in gpus_'s order
  std::vector<GpuInfo> gpus_;
  std::string gpu_absent_reason_;
  std::vector<std::string> same_run_env_;
  std::map<pid_t, bool> same_run_seen_;  // pid -> carries a same-run entry (read once per pid)
  std::map<pid_t, bool> own_pid_seen_;   // pid -> one of pids_ or a descendant (walked once per pid)
  std::vector<unsigned> max_sm_mhz_;     // per device, 0 until read
  std::vector<bool> own_seen_;           // per device: one of the job's processes was listed on it
  GpuConditions conditions_;
  long clock_ticks_ = 100;
  long page_size_ = 4096;
};

struct SamplerOptions {
  double hz = 10.0;  // samples per second (> 0, <= 1000)
};

class UtilSampler {
 public:
  using Sink = std::function<void(const UtilSample&)>;
  // Starts the thread. Throws std::invalid_argument for a bad rate.
  UtilSampler(std::unique_ptr<UtilReader> reader, const SamplerOptions& opts, Sink sink);
  ~UtilSampler();  // stop() then join
  UtilSampler(const UtilSampler&) = delete;
  UtilSampler& operator=(const UtilSampler&) = delete;

  void stop();                  // idempotent; after it returns the sink is not called again
  std::size_t samples() const;  // rows delivered so far
  std::string error() const;    // what stopped the thread early (a throwing sink), or ""
  const UtilReader& reader() const { return *reader_; }

 private:
  void loop();
  std::unique_ptr<UtilReader> reader_;
  SamplerOptions opts_;
  Sink sink_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::size_t samples_ = 0;
  std::string error_;
  std::thread thread_;
};

}  // namespace gridrun::hw
