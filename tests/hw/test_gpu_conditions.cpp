// The GPU conditions of a job (hw/gpu_conditions.hpp): the classification of NVML readings with
// fabricated values, the sampler's NVML binding of them against the fake NVML (fake_nvml.c, set
// through its environment variables), and, label gpu, the real NVML where a GPU is visible.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstdlib>
#include <string>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/hw/gpu_conditions.hpp"
#include "gridrun/hw/util_sampler.hpp"

using namespace gridrun::hw;

TEST(GpuConditions, ThrottleReasonsBenignAndSlowing) {
  // Idle, the applications-clocks and display-clock settings and sync boost say what the clocks
  // were set to: not throttling.
  for (unsigned long long benign :
       {kClocksGpuIdle, kClocksApplicationsSetting, kClocksSyncBoost, kClocksDisplaySetting, 0ULL})
    EXPECT_EQ(throttling_bits(benign), 0u) << benign;
  for (unsigned long long slow :
       {kClocksSwPowerCap, kClocksHwSlowdown, kClocksSwThermal, kClocksHwThermal, kClocksHwPowerBrake})
    EXPECT_EQ(throttling_bits(slow | kClocksGpuIdle), slow) << slow;
  EXPECT_EQ(throttle_reason_names(kClocksSwPowerCap | kClocksHwThermal | kClocksGpuIdle),
            "power cap, thermal (hardware)");
  EXPECT_EQ(throttle_reason_names(kClocksApplicationsSetting), "");
}

TEST(GpuConditions, ForeignProcessesAreNeitherOwnNorSameRun) {
  const std::vector<pid_t> own = {100, 101};
  auto none = [](pid_t) { return false; };
  // Without one of the job's own ranks in the list nothing can be told (no CUDA context yet, or
  // NVML's PIDs are another namespace's): unknown, not "none".
  EXPECT_EQ(count_foreign({}, own, none), -1);
  EXPECT_EQ(count_foreign({555}, own, none), -1);
  EXPECT_EQ(count_foreign({100, 101}, own, none), 0);
  // One process on two of its GPUs counts once.
  EXPECT_EQ(count_foreign({100, 555, 101, 555, 777}, own, none), 2);
  // A process of the same run (a jobs_per_gpu neighbour) is not foreign.
  EXPECT_EQ(count_foreign({100, 555, 777}, own, [](pid_t p) { return p == 555; }), 1);
}

TEST(GpuConditions, SummaryOverSamples) {
  GpuConditions c;
  EXPECT_TRUE(c.summary().empty()) << "nothing measured: no figure (unknown), not zeros";
  c.add({0, 1.0, static_cast<long long>(kClocksGpuIdle)});
  c.add({2, 0.8, static_cast<long long>(kClocksSwPowerCap)});
  c.add({-1, 0.6, static_cast<long long>(kClocksSwThermal | kClocksApplicationsSetting)});
  c.add({1, -1, -1});
  const auto s = c.summary();
  EXPECT_DOUBLE_EQ(s.at("gpu_foreign_share"), 2.0 / 3);  // of the 3 samples with a known list
  EXPECT_DOUBLE_EQ(s.at("gpu_foreign_procs_max"), 2);
  EXPECT_DOUBLE_EQ(s.at("gpu_sm_clock_share"), 0.8);
  EXPECT_DOUBLE_EQ(s.at("gpu_throttled_share"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(s.at("gpu_throttle_reasons"), static_cast<double>(kClocksSwPowerCap | kClocksSwThermal));
}

namespace {
// Sets an environment variable for the fake NVML for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& v) : name(std::move(n)) { setenv(name.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};
}  // namespace

// The sampler's NVML binding of the process list, the clocks and the reasons (the fake's devices
// both list the same processes).
TEST(GpuConditions, SamplerReadsThemThroughNvml) {
  const std::string self = std::to_string(getpid()), parent = std::to_string(getppid());
  ScopedEnv pids("FAKE_NVML_PIDS", self + "," + parent);
  ScopedEnv reasons("FAKE_NVML_REASONS", std::to_string(kClocksSwPowerCap | kClocksGpuIdle));
  UtilReaderOptions o;
  o.nvml_library = FAKE_NVML;
  o.visible_devices = "0,1";
  {
    UtilReader p(o);
    ASSERT_EQ(p.gpu_count(), 2) << p.gpu_absent_reason();
    p.sample();
    p.sample();
    const auto s = p.gpu_conditions().summary();
    EXPECT_DOUBLE_EQ(s.at("gpu_foreign_share"), 1.0);  // the parent process, on both GPUs: one
    EXPECT_DOUBLE_EQ(s.at("gpu_foreign_procs_max"), 1);
    EXPECT_NEAR(s.at("gpu_sm_clock_share"), 1410.0 / 1980.0, 1e-12);
    EXPECT_DOUBLE_EQ(s.at("gpu_throttled_share"), 1.0);
    EXPECT_DOUBLE_EQ(s.at("gpu_throttle_reasons"), static_cast<double>(kClocksSwPowerCap));
  }
  {
    // The parent as a process of the same run: an entry of its environment as it was at exec.
    const std::string env =
        gridrun::base::try_read_file("/proc/" + parent + "/environ", gridrun::base::kinds::kProcFile)
            .value_or("");
    const std::string first = env.substr(0, env.find('\0'));
    ASSERT_NE(first.find('='), std::string::npos) << "parent's environment unreadable";
    o.same_run_env = {first};
    UtilReader p(o);
    p.sample();
    EXPECT_DOUBLE_EQ(p.gpu_conditions().summary().at("gpu_foreign_share"), 0.0);
  }
  {
    // No process listed (the job's ranks not among them): the process figures are unknown.
    unsetenv("FAKE_NVML_PIDS");
    UtilReader p(o);
    p.sample();
    const auto s = p.gpu_conditions().summary();
    EXPECT_EQ(s.count("gpu_foreign_share"), 0u);
    EXPECT_EQ(s.count("gpu_throttled_share"), 1u);
  }
}

// A GPU's memory is the job's own processes' (a GPU shared with other jobs holds theirs too): the
// sampled PID and its descendants as NVML lists them (the fake gives the k-th listed k+1 MiB); the
// device's used memory until one of them is listed.
TEST(GpuConditions, MemoryIsTheJobsOwnProcesses) {
  const pid_t child = fork();  // a descendant of the sampled process, as a launcher script's python
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{child};
  const std::string self = std::to_string(getpid()), parent = std::to_string(getppid());
  constexpr double kMiB = 1 << 20;
  UtilReaderOptions o;
  o.nvml_library = FAKE_NVML;
  o.visible_devices = "0,1";
  UtilReader never_listed(o);
  ScopedEnv pids("FAKE_NVML_PIDS", parent + "," + self + "," + std::to_string(child));
  UtilReader p(o);
  ASSERT_EQ(p.gpu_count(), 2) << p.gpu_absent_reason();
  auto row = p.sample();
  ASSERT_EQ(row.gpu_mem_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(row.gpu_mem_bytes[0], 5 * kMiB);  // itself (2 MiB) and its child (3), not the parent
  EXPECT_DOUBLE_EQ(row.gpu_mem_bytes[1], 5 * kMiB);
  // Its processes gone from the list, the neighbour still there: none of the neighbour's counts.
  setenv("FAKE_NVML_PIDS", parent.c_str(), 1);
  EXPECT_DOUBLE_EQ(p.sample().gpu_mem_bytes[0], 0);
  // A reader that has never seen its processes listed: the device's used memory (the fake's 1 and
  // 2 GiB), as where NVML's PIDs are of another namespace.
  row = never_listed.sample();
  EXPECT_DOUBLE_EQ(row.gpu_mem_bytes[0], 1024 * kMiB);
  EXPECT_DOUBLE_EQ(row.gpu_mem_bytes[1], 2048 * kMiB);
}

TEST(GpuConditions, CpuJobHasNone) {
  UtilReaderOptions o;
  o.gpus = false;
  UtilReader p(o);
  p.sample();
  EXPECT_TRUE(p.gpu_conditions().summary().empty());
}

// Label gpu (tests/CMakeLists.txt: SamplerGpu.*): the real NVML answers the clock and the reasons
// through the dlopen binding. This process has no CUDA context, so the process list holds none of
// its own and the foreign figures stay unknown.
TEST(SamplerGpu, RealNvmlConditions) {
  UtilReader p(UtilReaderOptions{});
  if (p.gpu_count() == 0) GTEST_SKIP() << "no GPU: " << p.gpu_absent_reason();
  p.sample();
  const auto s = p.gpu_conditions().summary();
  ASSERT_EQ(s.count("gpu_sm_clock_share"), 1u) << "NVML gave no SM clock or maximum";
  EXPECT_GT(s.at("gpu_sm_clock_share"), 0);
  EXPECT_LE(s.at("gpu_sm_clock_share"), 1.0 + 1e-9);
  ASSERT_EQ(s.count("gpu_throttled_share"), 1u) << "NVML gave no clocks event reasons";
  EXPECT_EQ(s.count("gpu_foreign_share"), 0u);
}
