// Roofline figures, the GPU peak table, the probe's JSON round trip and the /profile table written
// by JobWriter::set_profile and read back by read_job (real HDF5 files).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "gridrun/hw/peak_probe.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"
#include "roofline.hpp"
#include "test_util.hpp"

using namespace gridrun::results;
using namespace gridrun::report;
using namespace gridrun::hw;
using gridrun::results::testing::TempDir;

namespace {

JobData job(const std::string& device, int ranks, const std::string& precision = "fp32") {
  JobData j;
  j.id = device + std::to_string(ranks);
  gridrun::jobs::JobParams p;
  p.device = *gridrun::base::parse_device(device);
  p.ranks = ranks;
  p.precision = *gridrun::base::parse_precision(precision);
  p.tf32 = false;  // the table's default is true; these cases start from plain fp32
  j.params = p;
  j.summary["flops_per_sample"] = 1e6;
  j.summary["bytes_per_sample"] = 2.5e5;
  j.summary["samples_per_s"] = 1000;
  return j;
}

ProbeResult probe() {
  ProbeResult p;
  p.hostname = "h";
  p.threads = 8;
  p.gemm_gflops_1t = 50;
  p.gemm_gflops_all = 300;
  p.triad_gbs_1t = 10;
  p.triad_gbs_all = 40;
  return p;
}

}  // namespace

TEST(Roofline, PeakTableMatchesDeviceNames) {
  ASSERT_NE(find_gpu_peak("NVIDIA H100 80GB HBM3"), nullptr);
  EXPECT_EQ(find_gpu_peak("NVIDIA H100 80GB HBM3")->name, "H100");
  EXPECT_EQ(find_gpu_peak("NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(find_gpu_peak("NVIDIA H200")->mem_tbs, 4.8);
  EXPECT_EQ(find_gpu_peak("NVIDIA A100-SXM4-40GB")->bf16_tflops, 312);
  EXPECT_EQ(find_gpu_peak("Tesla V100-SXM2-16GB")->fp16_tflops, 125);
  EXPECT_EQ(find_gpu_peak("NVIDIA GeForce RTX 4090"), nullptr);
}

TEST(Roofline, AchievedFlopsIsThreeTimesForwardForTraining) {
  JobData j = job("cpu", 1);
  EXPECT_DOUBLE_EQ(achieved_flops(j), 3 * 1e6 * 1000);
  j.params->task = gridrun::base::Task::inference;
  EXPECT_DOUBLE_EQ(achieved_flops(j), 1e6 * 1000);
  j.summary["flops_per_s"] = 42;  // the runner's own figure wins
  EXPECT_DOUBLE_EQ(achieved_flops(j), 42);
}

TEST(Roofline, GpuPointsArePerDeviceUnderTheTablePeak) {
  JobData g = job("gpu", 4, "bf16");
  g.attrs["gpu_names"] = std::string("NVIDIA H100 80GB HBM3,NVIDIA H100 80GB HBM3");
  Roofline r = build_roofline({&g}, {"g"}, {});
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_DOUBLE_EQ(r.points[0].intensity, 4.0);
  EXPECT_DOUBLE_EQ(r.points[0].flops_per_s, 3e9 / 4);
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 989e12);
  ASSERT_EQ(r.roofs.size(), 1u);
  EXPECT_EQ(r.roofs[0].label, "H100 bf16");
  EXPECT_DOUBLE_EQ(r.roofs[0].bandwidth, 3.35e12);
  RoofOptions o;
  o.peak_tflops = 100;
  r = build_roofline({&g}, {"g"}, o);
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 100e12);
}

TEST(Roofline, Fp32GpuJobsWithTf32UseTheTensorCoreRoof) {
  // tf32: true (the default since the parameter exists) ran convolutions and matmuls on TF32
  // tensor cores; results without the parameter keep the plain fp32 roof they were reported with.
  JobData g = job("gpu", 1, "fp32");
  g.attrs["gpu_names"] = std::string("NVIDIA H100 80GB HBM3");
  Roofline r = build_roofline({&g}, {"g"}, {});
  ASSERT_EQ(r.roofs.size(), 1u);
  EXPECT_EQ(r.roofs[0].label, "H100 fp32");
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 67e12);
  g.params->tf32 = true;
  r = build_roofline({&g}, {"g"}, {});
  EXPECT_EQ(r.roofs[0].label, "H100 tf32");
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 494.5e12);
  g.params->tf32 = false;
  r = build_roofline({&g}, {"g"}, {});
  EXPECT_EQ(r.roofs[0].label, "H100 fp32");
}

TEST(Roofline, InferenceJobsUseTheFp32RoofTheyRanAt) {
  // Inference runs the fp32 model forward without autocast, and the runner applies the TF32 policy
  // to training only: the roof is plain fp32 whatever `tf32` and `precision` say (issue 46: the
  // runner's MFU and the report's roofline share hw::roof_query).
  JobData g = job("gpu", 1, "fp32");
  g.attrs["gpu_names"] = std::string("NVIDIA H100 80GB HBM3");
  g.params->task = gridrun::base::Task::inference;
  g.params->tf32 = true;
  Roofline r = build_roofline({&g}, {"g"}, {});
  ASSERT_EQ(r.roofs.size(), 1u);
  EXPECT_EQ(r.roofs[0].label, "H100 fp32");
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 67e12);
  g.params->precision = gridrun::base::Precision::bf16;  // a job file jobs::check would refuse
  r = build_roofline({&g}, {"g"}, {});
  EXPECT_EQ(r.roofs[0].label, "H100 fp32");
  // The shared rule itself: training keeps its precision, and TF32 only on a GPU.
  JobRoofFacts f;
  f.device = gridrun::base::Device::gpu;
  f.precision = gridrun::base::Precision::fp32;
  f.tf32 = true;
  f.ranks = 0;
  f.gpu_names = "NVIDIA H100 80GB HBM3,NVIDIA H100 80GB HBM3";
  RoofQuery q = roof_query(f);
  EXPECT_EQ(q.precision, MathMode::tf32);
  EXPECT_EQ(q.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(q.ranks, 1);
  f.inference = true;
  EXPECT_EQ(roof_query(f).precision, MathMode::fp32);
  f.inference = false;
  f.device = gridrun::base::Device::cpu;
  q = roof_query(f);
  EXPECT_EQ(q.precision, MathMode::fp32);
  EXPECT_TRUE(q.gpu_name.empty());
}

TEST(Roofline, CpuRoofScalesWithCoresUsedAndNeedsTheProbe) {
  JobData one = job("cpu", 1), four = job("cpu", 4), many = job("cpu", 16);
  Roofline r = build_roofline({&one}, {"one"}, {});
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_TRUE(r.points[0].roof.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("gridrun probe"), std::string::npos);
  RoofOptions o;
  o.probe = probe();
  o.probe_source = "probe.json";
  r = build_roofline({&one, &four, &many}, {"one", "four", "many"}, o);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_DOUBLE_EQ(r.points[0].peak_flops, 50e9);   // one core
  EXPECT_DOUBLE_EQ(r.points[1].peak_flops, 200e9);  // 4 x 1-thread rate
  EXPECT_DOUBLE_EQ(r.points[2].peak_flops, 300e9);  // capped by the all-threads run
  EXPECT_EQ(r.roofs.size(), 3u);
}

TEST(Roofline, JobsWithoutBytesOrFlopsAreLeftOutWithANote) {
  JobData nobytes = job("cpu", 1), noflops = job("cpu", 1);
  nobytes.id = "nobytes";
  nobytes.summary.erase("bytes_per_sample");
  noflops.id = "noflops";
  noflops.summary.erase("samples_per_s");
  Roofline r = build_roofline({&nobytes, &noflops}, {"a", "b"}, {});
  EXPECT_TRUE(r.points.empty());
  std::string all;
  for (const auto& n : r.notes) all += n + "\n";
  EXPECT_NE(all.find("bytes_per_sample"), std::string::npos);
  EXPECT_NE(all.find("nobytes"), std::string::npos);
  EXPECT_NE(all.find("noflops"), std::string::npos);
}

TEST(Probe, JsonRoundTripAndErrors) {
  TempDir dir;
  ProbeResult p = probe();
  p.cpu_model = "Some \"quoted\" CPU";
  std::ofstream(dir / "p.json") << probe_to_json(p);
  ProbeResult q = read_probe(dir / "p.json");
  EXPECT_EQ(q.cpu_model, p.cpu_model);
  EXPECT_EQ(q.threads, 8);
  EXPECT_DOUBLE_EQ(q.gemm_gflops_all, 300);
  EXPECT_DOUBLE_EQ(q.triad_gbs_1t, 10);
  std::ofstream(dir / "bad.json") << "{\"threads\": 2}";
  try {
    read_probe(dir / "bad.json");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gemm_n"), std::string::npos);
  }
  EXPECT_THROW(run_probe(MachineProbeOptions{0.0}, {}), std::invalid_argument);
}

TEST(Probe, ShortRunGivesPositiveFigures) {
  MachineProbeOptions o;
  o.seconds = 0.2;
  o.threads = 2;
  o.gemm_n = 96;  // not a multiple of the 4 x 16 block: exercises the edge code
  o.triad_elems = 1 << 16;
  int lines = 0;
  ProbeResult r = run_probe(o, [&](const std::string&) { ++lines; });
  EXPECT_EQ(lines, 4);
  EXPECT_EQ(r.threads, 2);
  EXPECT_GT(r.gemm_gflops_1t, 0);
  EXPECT_GT(r.gemm_gflops_all, 0);
  EXPECT_GT(r.triad_gbs_1t, 0);
  EXPECT_GT(r.triad_gbs_all, 0);
}

TEST(Profile, SetProfileWritesAFixedLengthStringTableReadBack) {
  TempDir dir;
  JobFileInfo info;
  info.id = "prof";
  info.params = gridrun::jobs::job_params_from_json("{\"model\":\"mlp\"}");
  info.gpu_absent_reason = "cpu job";
  auto w = JobWriter::create(dir.path(), info);
  w->set_profile({{"aten::addmm", 3, 10.5, 20, 0, 0}, {"aten::convolution_backward", 2, 7, 9, 1, 2}});
  w->finish(Status::Completed, "done", {});
  JobData j = read_job(dir / "prof.h5");
  ASSERT_EQ(j.profile.size(), 2u);
  EXPECT_EQ(j.profile[0].name, "aten::addmm");
  EXPECT_EQ(j.profile[1].name, "aten::convolution_backward");
  EXPECT_EQ(j.profile[0].calls, 3);
  EXPECT_DOUBLE_EQ(j.profile[0].self_cpu_us, 10.5);
  EXPECT_DOUBLE_EQ(j.profile[1].total_device_us, 2);
}
