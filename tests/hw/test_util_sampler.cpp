// UtilReader/UtilSampler on this machine's real /proc (and NVML when a driver is present).
#include <gtest/gtest.h>

#include <sys/times.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "gridrun/hw/util_sampler.hpp"

using namespace gridrun::hw;

namespace {
// This process's user + system CPU time in clock ticks (all threads), as /proc/self/stat has it.
clock_t own_ticks() {
  tms t{};
  times(&t);
  return t.tms_utime + t.tms_stime;
}
}  // namespace

TEST(Sampler, SamplesOwnProcess) {
  UtilReaderOptions o;
  o.gpus = false;
  UtilReader p(o);
  EXPECT_EQ(p.rank_count(), 1);
  EXPECT_EQ(p.gpu_count(), 0);
  EXPECT_EQ(p.gpu_absent_reason(), "cpu job");
  // Burn CPU until the kernel has charged this process two clock ticks (what /proc/<pid>/stat
  // counts in), however fast the machine: a fixed amount of work could fit in one tick and read
  // as 0 %. The deadline only bounds a broken clock.
  const clock_t start = own_ticks();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  volatile double x = 0;
  while (own_ticks() - start < 2 && std::chrono::steady_clock::now() < deadline)
    for (int i = 0; i < 1000000; ++i) x = x + std::sqrt(static_cast<double>(i));
  ASSERT_GE(own_ticks() - start, 2) << "no CPU time charged in 30 s";
  UtilSample r = p.sample();
  ASSERT_EQ(r.rank_cpu_pct.size(), 1u);
  ASSERT_EQ(r.rank_rss_bytes.size(), 1u);
  EXPECT_GT(r.rank_rss_bytes[0], 1 << 20);
  EXPECT_GT(r.rank_cpu_pct[0], 0);
  EXPECT_GE(r.time_s, 0);
  EXPECT_FALSE(std::isnan(r.node_cpu_pct));
  EXPECT_TRUE(r.gpu_util_pct.empty());
}

TEST(Sampler, MissingNvmlGivesReason) {
  UtilReaderOptions o;
  o.nvml_library = "libnvidia-ml-does-not-exist.so.1";
  UtilReader p(o);
  EXPECT_EQ(p.gpu_count(), 0);
  EXPECT_NE(p.gpu_absent_reason().find("NVML not available"), std::string::npos);
  EXPECT_TRUE(p.sample().gpu_util_pct.empty());
}

TEST(Sampler, RealNvmlWhenPresent) {
  // On a GPU machine this samples the devices; elsewhere it must say why there are none.
  UtilReader p(UtilReaderOptions{});
  if (p.gpu_count() == 0) {
    EXPECT_FALSE(p.gpu_absent_reason().empty());
    return;
  }
  UtilSample r = p.sample();
  ASSERT_EQ(r.gpu_util_pct.size(), static_cast<std::size_t>(p.gpu_count()));
  EXPECT_GT(r.gpu_mem_bytes[0], 0);
  EXPECT_FALSE(p.gpus()[0].uuid.empty());
}

TEST(Sampler, DeadPidGivesNaN) {
  UtilReaderOptions o;
  o.gpus = false;
  o.pids = {getpid(), 0x3fffffff};
  UtilReader p(o);
  UtilSample r = p.sample();
  EXPECT_FALSE(std::isnan(r.rank_rss_bytes[0]));
  EXPECT_TRUE(std::isnan(r.rank_rss_bytes[1]));
  EXPECT_TRUE(std::isnan(r.rank_cpu_pct[1]));
}

TEST(Sampler, ThreadDeliversRowsUntilStopped) {
  UtilReaderOptions o;
  o.gpus = false;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<UtilSample> rows;
  UtilSampler s(std::make_unique<UtilReader>(o), SamplerOptions{200.0}, [&](const UtilSample& r) {
    std::lock_guard<std::mutex> lock(mu);
    rows.push_back(r);
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return rows.size() >= 5; });
  }
  s.stop();
  std::size_t n = s.samples();
  EXPECT_GE(n, 5u);
  EXPECT_EQ(s.error(), "");
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(rows.size(), n);  // nothing delivered after stop()
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_GT(rows[k].time_s, rows[k - 1].time_s);
}

TEST(Sampler, ThrowingSinkStopsWithError) {
  UtilReaderOptions o;
  o.gpus = false;
  std::mutex mu;
  std::condition_variable cv;
  bool called = false;
  UtilSampler s(std::make_unique<UtilReader>(o), SamplerOptions{500.0}, [&](const UtilSample&) {
    {
      std::lock_guard<std::mutex> lock(mu);
      called = true;
    }
    cv.notify_all();
    throw std::runtime_error("disk full");
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return called; });
  }
  s.stop();
  EXPECT_EQ(s.error(), "disk full");
  EXPECT_EQ(s.samples(), 0u);
}

TEST(Sampler, RejectsBadRate) {
  UtilReaderOptions o;
  o.gpus = false;
  EXPECT_THROW(UtilSampler(std::make_unique<UtilReader>(o), SamplerOptions{0.0}, [](const UtilSample&) {}),
               std::invalid_argument);
}

// The dlopen binding and device selection, against a two-device NVML test double (beside the
// real-NVML test above, which runs where a driver is installed).
TEST(Sampler, FakeNvmlAllDevices) {
  UtilReaderOptions o;
  o.nvml_library = FAKE_NVML;
  o.visible_devices = "0,1";
  UtilReader p(o);
  ASSERT_EQ(p.gpu_count(), 2) << p.gpu_absent_reason();
  EXPECT_EQ(p.gpus()[1].name, "Fake GPU 1");
  UtilSample r = p.sample();
  ASSERT_EQ(r.gpu_util_pct.size(), 2u);
  EXPECT_EQ(r.gpu_util_pct[1], 41);
  EXPECT_EQ(r.gpu_mem_bytes[1], 2.0 * (1 << 30));
  EXPECT_EQ(r.gpu_power_w[0], 100);
  EXPECT_EQ(r.gpu_energy_j[0], 5000);
  EXPECT_EQ(r.gpu_temp_c[0], 55);
  EXPECT_EQ(r.gpu_sm_mhz[0], 1410);
}

TEST(Sampler, FakeNvmlVisibleDevicesByIndexAndUuid) {
  UtilReaderOptions o;
  o.nvml_library = FAKE_NVML;
  o.visible_devices = "1";
  UtilReader by_index(o);
  ASSERT_EQ(by_index.gpu_count(), 1);
  EXPECT_EQ(by_index.gpus()[0].nvml_index, 1u);
  o.visible_devices = "GPU-bbbb2222,GPU-aaaa1111";
  UtilReader by_uuid(o);
  ASSERT_EQ(by_uuid.gpu_count(), 2);
  EXPECT_EQ(by_uuid.gpus()[0].nvml_index, 1u);
  EXPECT_EQ(by_uuid.gpus()[1].nvml_index, 0u);
  o.visible_devices = "7";
  UtilReader none(o);
  EXPECT_EQ(none.gpu_count(), 0);
  EXPECT_EQ(none.gpu_absent_reason(), "no GPU selected by CUDA_VISIBLE_DEVICES");
}

// Label gpu (registered in tests/CMakeLists.txt): where a GPU is visible, NVML through the dlopen
// binding reports it with a name, a UUID, memory in use and a utilisation in [0, 100].
TEST(SamplerGpu, RealNvmlSamplesTheGpu) {
  UtilReader p(UtilReaderOptions{});
  if (p.gpu_count() == 0) GTEST_SKIP() << "no GPU: " << p.gpu_absent_reason();
  const UtilSample r = p.sample();
  ASSERT_EQ(r.gpu_util_pct.size(), static_cast<std::size_t>(p.gpu_count()));
  for (int g = 0; g < p.gpu_count(); ++g) {
    EXPECT_FALSE(p.gpus()[g].name.empty());
    EXPECT_EQ(p.gpus()[g].uuid.rfind("GPU-", 0), 0u) << p.gpus()[g].uuid;
    EXPECT_GE(r.gpu_util_pct[g], 0);
    EXPECT_LE(r.gpu_util_pct[g], 100);
    EXPECT_GT(r.gpu_mem_bytes[g], 0);
  }
}
