// Roofline points of the jobs under their roofs (see roofline.hpp for the conventions).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "roofline.hpp"

#include "gridrun/base/job_kinds.hpp"
#include "gridrun/jobs/footprint.hpp"

namespace gridrun::report {

// Reports render results' records and job files; their vocabulary is used unqualified here.
using namespace gridrun::results;  // NOLINT(google-build-using-namespace)

using hw::find_gpu_peak;
using hw::Roof;
using hw::roof_for;
using hw::RoofQuery;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string param(const JobData& j, const std::string& k, const std::string& fallback = "") {
  std::string v = param_text(j.params, k);
  return v.empty() ? fallback : v;
}

double figure(const JobData& j, const std::string& k) {
  auto it = j.summary.find(k);
  if (it != j.summary.end() && std::isfinite(it->second)) return it->second;
  return j.attr_number(k, kNaN);
}

}  // namespace

double achieved_flops(const JobData& job) {
  double f = figure(job, "flops_per_s");
  if (std::isfinite(f) && f > 0) return f;
  const double sps = figure(job, "samples_per_s");
  const bool inference = base::parse_task(param(job, "task")) == base::Task::inference;
  double per_sample = inference ? figure(job, "flops_per_sample") : figure(job, "train_flops_per_sample");
  if (!inference && !std::isfinite(per_sample)) per_sample = 3.0 * figure(job, "flops_per_sample");
  return per_sample * sps;
}

Roofline build_roofline(const std::vector<const JobData*>& jobs, const std::vector<std::string>& labels,
                        const hw::RoofOptions& opts) {
  Roofline out;
  std::map<std::string, Roof> roofs;
  std::vector<std::string> no_flops, no_bytes, no_peak;
  std::set<std::string> unknown_gpus;
  const bool override_peak = std::isfinite(opts.peak_tflops) && opts.peak_tflops > 0;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const JobData& j = *jobs[k];
    double flops = achieved_flops(j);
    if (!std::isfinite(flops) || flops <= 0) {
      no_flops.push_back(j.id);
      continue;
    }
    const double bytes = figure(j, "bytes_per_sample");
    const double fwd = figure(j, "flops_per_sample");
    if (!std::isfinite(bytes) || bytes <= 0 || !std::isfinite(fwd) || fwd <= 0) {
      no_bytes.push_back(j.id);
      continue;
    }
    RooflinePoint p;
    p.id = j.id;
    p.label = labels[k];
    p.intensity = fwd / bytes;
    hw::JobRoofFacts f;
    f.device = device_of(j.params).value_or(jobs::Device::cpu);
    f.inference = base::parse_task(param(j, "task")) == base::Task::inference;
    f.precision = base::parse_precision(param(j, "precision", "fp32")).value_or(base::Precision::fp32);
    // Results written before the parameter existed keep the fp32 roof they were reported with.
    const std::string tf = param(j, "tf32", "false");
    f.tf32 = tf != "false" && tf != "0";
    f.ranks = j.params ? static_cast<double>(j.params->ranks) : 1.0;
    f.threads_per_rank = j.params ? static_cast<double>(j.params->threads_per_rank) : 1.0;
    f.gpu_names = j.attr_string("gpu_names");
    const RoofQuery q = hw::roof_query(f);
    // Per device: the job's FLOP/s over its GPUs (jobs::Footprint::compute_devices; one CPU on cpu).
    p.flops_per_s = j.params ? flops / static_cast<double>(std::max<std::int64_t>(
                                           1, jobs::footprint(*j.params).compute_devices()))
                             : flops;
    if (f.device == jobs::Device::gpu && !find_gpu_peak(q.gpu_name))
      unknown_gpus.insert(q.gpu_name.empty() ? "(no gpu_names attribute)" : q.gpu_name);
    const Roof roof = roof_for(q, opts);
    if (!roof.label.empty()) {
      p.roof = roof.label;
      p.peak_flops = roof.peak_flops;
      roofs[roof.label] = roof;
    } else {
      no_peak.push_back(j.id);
    }
    out.points.push_back(p);
  }
  for (auto& [label, r] : roofs) out.roofs.push_back(r);
  auto list = [](const std::vector<std::string>& ids) {
    std::string s;
    for (std::size_t k = 0; k < ids.size() && k < 6; ++k) s += (k ? ", " : "") + ids[k];
    if (ids.size() > 6) s += ", ... (" + std::to_string(ids.size()) + " in all)";
    return s;
  };
  if (!no_flops.empty())
    out.notes.push_back("left out, no FLOP figures (flops_per_s or flops_per_sample x samples_per_s): " +
                        list(no_flops));
  if (!no_bytes.empty())
    out.notes.push_back(
        "left out, no bytes_per_sample in /summary or the root attributes, so no "
        "arithmetic intensity: " +
        list(no_bytes));
  if (!no_peak.empty())
    out.notes.push_back("no roof for " + list(no_peak) +
                        ": run `gridrun probe` (CPU) or pass --peak-tflops (any device)");
  for (const auto& g : unknown_gpus)
    out.notes.push_back("GPU '" + g +
                        "' is not in the built-in peak table (H100, H200, A100, V100): "
                        "pass --peak-tflops");
  if (opts.probe && !override_peak)
    out.notes.push_back("CPU roofs from " + opts.probe_source + " (" + opts.probe->hostname + ", " +
                        opts.probe->cpu_model + "): gridrun's own GEMM, a lower bound of the true peak");
  return out;
}

}  // namespace gridrun::report
