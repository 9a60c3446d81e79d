// The one NVML loader (hw::Nvml) against the two-device test double and a missing library, and the
// one CUDA_VISIBLE_DEVICES parser (issue 46: the sampler and the scheduler's GPU discovery share both).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gridrun/hw/nvml.hpp"
#include "gridrun/hw/visible_devices.hpp"

using namespace gridrun::hw;

TEST(Nvml, LoadsTheTestDouble) {
  Nvml lib(FAKE_NVML);
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.device_count(), 2u);
  ASSERT_NE(lib.by_index, nullptr);
  ASSERT_NE(lib.name, nullptr);
  nvml::Device d = nullptr;
  ASSERT_EQ(lib.by_index(1, &d), 0);
  char buf[64] = {0};
  ASSERT_EQ(lib.name(d, buf, sizeof buf), 0);
  EXPECT_EQ(std::string(buf), "Fake GPU 1");
  std::vector<nvml::GpuProcess> procs;
  EXPECT_TRUE(lib.processes(d, procs));
}

TEST(Nvml, MissingLibrarySaysWhy) {
  const Nvml lib("libnvidia-ml-does-not-exist.so.1");
  EXPECT_FALSE(lib.ok());
  EXPECT_EQ(lib.error(), "NVML not available (libnvidia-ml-does-not-exist.so.1 not loadable)");
  EXPECT_EQ(lib.device_count(), std::nullopt);
}

TEST(VisibleDevices, EntriesAsCudaReadsThem) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parse_visible_devices("0,1"), (V{"0", "1"}));
  EXPECT_EQ(parse_visible_devices(" 2 , GPU-8f3a ,,MIG-aa"), (V{"2", "GPU-8f3a", "MIG-aa"}));
  EXPECT_EQ(parse_visible_devices("1,-1,0"), (V{"1"}));  // "-1" ends the list
  EXPECT_EQ(parse_visible_devices(""), V{});
  EXPECT_EQ(parse_visible_devices(" , "), V{});
}

TEST(VisibleDevices, UnsetMeansEveryDeviceAndEmptyMeansNone) {
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = old ? old : "";
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(visible_devices_from_env(), std::nullopt);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  ASSERT_TRUE(visible_devices_from_env());
  EXPECT_TRUE(visible_devices_from_env()->empty());
  setenv("CUDA_VISIBLE_DEVICES", "3,GPU-x", 1);
  EXPECT_EQ(visible_devices_from_env(), (std::vector<std::string>{"3", "GPU-x"}));
  if (old)
    setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  else
    unsetenv("CUDA_VISIBLE_DEVICES");
}
