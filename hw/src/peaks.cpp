// Compute and memory roofs of a device (see peaks.hpp).
#include "gridrun/hw/peaks.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace gridrun::hw {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string g3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

const std::vector<GpuPeak>& known_gpus() {
  // NVIDIA datasheets, SXM parts unless named, dense tensor-core figures (no 2:4 sparsity).
  static const std::vector<GpuPeak> table = {
      {"H100 PCIe", 756, 756, 51, 2.0, 378}, {"H200", 989, 989, 67, 4.8, 494.5},
      {"H100", 989, 989, 67, 3.35, 494.5},   {"A100", 312, 312, 19.5, 1.555, 156},
      {"V100", 15.7, 125, 15.7, 0.9},  // no bf16 tensor cores: bf16 runs at the fp32 rate
  };
  return table;
}

const GpuPeak* find_gpu_peak(const std::string& device_name) {
  const std::string d = lower(device_name);
  for (const auto& g : known_gpus())
    if (d.find(lower(g.name)) != std::string::npos) return &g;
  return nullptr;
}

RoofQuery roof_query(const JobRoofFacts& job) {
  const bool gpu = job.device == base::Device::gpu;
  RoofQuery q;
  q.device = job.device;
  switch (job.inference ? base::Precision::fp32 : job.precision) {
    case base::Precision::bf16: q.precision = MathMode::bf16; break;
    case base::Precision::fp16: q.precision = MathMode::fp16; break;
    case base::Precision::fp32:
      q.precision = gpu && !job.inference && job.tf32 ? MathMode::tf32 : MathMode::fp32;
      break;
  }
  q.ranks = std::max(1.0, job.ranks);
  q.threads_per_rank = job.threads_per_rank;
  if (gpu) q.gpu_name = job.gpu_names.substr(0, job.gpu_names.find(','));
  return q;
}

Roof roof_for(const RoofQuery& q, const RoofOptions& opts) {
  Roof roof;
  const bool override_peak = std::isfinite(opts.peak_tflops) && opts.peak_tflops > 0;
  if (q.device == base::Device::gpu) {
    const GpuPeak* g = find_gpu_peak(q.gpu_name);
    if (override_peak) {
      roof.label = "--peak-tflops " + g3(opts.peak_tflops) + (g ? " (" + g->name + " memory)" : "");
      roof.peak_flops = opts.peak_tflops * 1e12;
      roof.bandwidth = g ? g->mem_tbs * 1e12 : 0;
    } else if (g) {
      double t = g->fp32_tflops;
      switch (q.precision) {
        case MathMode::bf16: t = g->bf16_tflops; break;
        case MathMode::fp16: t = g->fp16_tflops; break;
        case MathMode::tf32: t = g->tf32_tflops > 0 ? g->tf32_tflops : g->fp32_tflops; break;
        case MathMode::fp32: break;
      }
      roof.label = g->name + " " + math_mode_name(q.precision);
      roof.peak_flops = t * 1e12;
      roof.bandwidth = g->mem_tbs * 1e12;
    }
    return roof;
  }
  const double cores = std::max(1.0, q.ranks * q.threads_per_rank);
  if (override_peak) {
    roof.label = "--peak-tflops " + g3(opts.peak_tflops);
    roof.peak_flops = opts.peak_tflops * 1e12;
    if (opts.probe) roof.bandwidth = opts.probe->triad_gbs_all * 1e9;
  } else if (opts.probe) {
    const ProbeResult& pr = *opts.probe;
    // The cores the job used, at the 1-thread rate, capped by the all-threads measurement
    // (but never below one core: a busy machine can make the all-threads run the slower).
    const double used = std::min<double>(cores, pr.threads);
    roof.peak_flops =
        (used <= 1 ? pr.gemm_gflops_1t
                   : std::max(pr.gemm_gflops_1t, std::min(pr.gemm_gflops_all, pr.gemm_gflops_1t * used))) *
        1e9;
    roof.bandwidth = (used <= 1 ? pr.triad_gbs_1t : std::max(pr.triad_gbs_1t, pr.triad_gbs_all)) * 1e9;
    roof.label = "CPU " + g3(used) + (used == 1 ? " core" : " cores") + " (probe)";
  }
  return roof;
}

}  // namespace gridrun::hw
