// JobHarness (see job_harness.hpp): the set-up and the end of every gridrun-train job.
#include "job_harness.hpp"

#include <ATen/ATen.h>
#include <torch/utils.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>
#endif

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "checkpoint.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/hw/peak_probe.hpp"
#include "gridrun/hw/peaks.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/errors.hpp"
#include "init_export.hpp"
#include "model_cost.hpp"
#include "signals.hpp"
#include "system_info.hpp"

namespace gridrun::runner {

namespace {

namespace fs = std::filesystem;

// CPU, or this rank's CUDA device (local rank modulo visible devices, so CUDA_VISIBLE_DEVICES is
// honoured). device=gpu without a visible device, or on a build without CUDA/NCCL, is bad input.
torch::Device select_device(const jobs::JobParams& j, Communicator& comm) {
  torch::Device dev(torch::kCPU);
  const bool gpu = j.device == jobs::Device::gpu;
#ifdef GRIDRUN_HAVE_NCCL
  if (gpu) {
    const auto n = torch::cuda::device_count();
    if (n == 0) throw BadInput("gridrun-train: device=gpu but no CUDA device is visible");
    dev = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(comm.local_rank() % n));
  }
#else
  (void)comm;
  if (gpu) throw BadInput("gridrun-train: device=gpu but this build has no CUDA/NCCL support (exit 2)");
#endif
  return dev;
}

// GPU settings of a training job, applied once before the model runs. TF32 policy: `tf32: true`
// (the default) lets fp32 convolutions and matmuls use TF32 tensor cores (PyTorch's defaults allow
// it for cuDNN convolutions only); `tf32: false` keeps both in full fp32, for exact comparisons.
void apply_gpu_settings(const jobs::JobParams& j) {
  auto& ctx = at::globalContext();
  ctx.setBenchmarkCuDNN(j.cudnn_benchmark);
  ctx.setAllowTF32CuDNN(j.tf32);
  ctx.setFloat32MatmulPrecision(j.tf32 ? "high" : "highest");
}

bool conv_model(const std::string& m) {
  return m == "lenet" || m == "resnet18" || m == "resnet50" || m == "vgg11" || m == "vgg16" ||
         m == "alexnet" || m == "densenet121";
}

// channels_last for convolution nets on the GPU whenever convolutions run on tensor cores: bf16/fp16,
// and fp32 under TF32 (the default). Measured on an H200 (BENCHMARKS.md, "PyTorch at its best"):
// in fp32 NHWC ran 1.2-1.7x NCHW at batch 128-512 (resnet18 batch 512: 37,179 vs 22,162 samples/s),
// where the old NCHW default trailed PyTorch's channels_last by up to 41 %. `tf32: false` (full fp32,
// the exact-comparison setting) and the CPU stay NCHW unless asked.
bool use_channels_last(const jobs::JobParams& j) {
  if (j.device != jobs::Device::gpu || !conv_model(j.model)) return false;
  if (j.memory_format == "channels_last") return true;
  return j.memory_format == "auto" && (j.precision != jobs::Precision::fp32 || j.tf32);
}

std::string join_hosts(const std::vector<std::string>& hosts, bool unique) {
  std::string joined;
  std::set<std::string> seen;
  for (const auto& h : hosts)
    if (!unique || seen.insert(h).second) joined += (joined.empty() ? "" : ",") + h;
  return joined;
}

// Root attributes of the results file: parameters, hosts, versions, model size and FLOPs.
results::JobFileInfo file_info(const RunnerOptions& o, const Communicator& comm,
                               const std::vector<std::string>& hosts, const Model& model,
                               const hw::UtilReader& probe) {
  results::JobFileInfo info;
  info.id = o.id;
  info.run = o.run;
  info.params = o.job;
  info.str_attrs["hostnames"] = join_hosts(hosts, true);
  info.str_attrs["rank_hosts"] = join_hosts(hosts, false);
  info.attempt_hostname = hosts.empty() ? base::hostname() : hosts.front();  // rank 0, the writer
  info.attempt_hostnames = info.str_attrs["hostnames"];
  // Under Slurm, which allocation ran this attempt and how often it was requeued before (facts for
  // /attempts; the runner never acts on them).
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* array_task = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* job = std::getenv("SLURM_JOB_ID");
  // Which sitting of the launcher started it (the job file's meta.sitting): the report measures a
  // phase only when all its jobs ran in one.
  if (const auto it = o.meta.find("sitting"); it != o.meta.end()) info.attempt_sitting = it->second;
  if (array_job && array_task)
    info.attempt_batch_id = std::string(array_job) + "_" + array_task;
  else if (job)
    info.attempt_batch_id = job;
  if (const char* restarts = std::getenv("SLURM_RESTART_COUNT")) {
    char* end = nullptr;
    const long long v = std::strtoll(restarts, &end, 10);
    if (end != restarts && *end == '\0' && v >= 0) info.attempt_restart_count = v;
  } else if (job) {
    info.attempt_restart_count = 0;
  }
  info.str_attrs["cpu_model"] = base::cpu_model();
  info.int_attrs["core_count"] = usable_cores();
  info.str_attrs["torch_version"] = torch_version();
  info.str_attrs[comm.name() == "nccl" ? "nccl_version" : "mpi_version"] = comm.library_version();
  info.str_attrs["communicator"] = comm.name();
  info.int_attrs["model_params"] = model.parameter_count();
  info.float_attrs["flops_per_sample"] = model.flops_per_sample();
  for (const auto& [k, v] : o.meta) info.str_attrs["meta." + k] = v;
  info.ranks = comm.size();
  info.gpus = probe.gpu_count();
  info.gpu_absent_reason = probe.gpu_absent_reason();
  std::string names, uuids;
  for (const auto& g : probe.gpus()) {
    names += (names.empty() ? "" : ",") + g.name;
    uuids += (uuids.empty() ? "" : ",") + g.uuid;
  }
  if (!names.empty()) {
    info.str_attrs["gpu_names"] = names;
    info.str_attrs["gpu_uuids"] = uuids;
  }
  return info;
}

// Adds peak_flops and mfu (= flops_per_s / peak of all the job's devices) to a summary that has
// flops_per_s, with the peak chosen as the report's roofline does (hw::roof_query, hw::roof_for). No peak
// known (CPU without a probe file, unknown GPU): nothing is added.
void add_mfu(results::Summary& s, const RunnerOptions& o, const std::string& gpu_name) {
  const auto fl = s.find("flops_per_s");
  if (fl == s.end() || !std::isfinite(fl->second) || fl->second <= 0) return;
  const double flops_per_s = fl->second;  // by value: the inserts below move the summary's items
  const jobs::JobParams& j = o.job;
  hw::RoofOptions ro;
  if (o.peak_tflops > 0) ro.peak_tflops = o.peak_tflops;
  const std::string probe_file = !o.probe_file.empty() ? o.probe_file : hw::default_probe_path();
  if (j.device == jobs::Device::cpu && !probe_file.empty() && fs::exists(probe_file)) {
    try {
      ro.probe = hw::read_probe(probe_file);
    } catch (const std::exception& e) {
      // A stale or foreign probe file must not fail a finished job; MFU is then simply absent.
      std::fprintf(stderr, "gridrun-train: warning: ignoring probe %s: %s\n", probe_file.c_str(), e.what());
    }
  }
  hw::JobRoofFacts f;
  f.device = j.device;
  f.inference = j.task == jobs::Task::inference;
  f.precision = j.precision;
  f.tf32 = j.tf32;
  f.ranks = static_cast<double>(j.ranks);
  f.threads_per_rank = static_cast<double>(j.threads_per_rank);
  f.gpu_names = gpu_name;
  const hw::Roof roof = hw::roof_for(hw::roof_query(f), ro);
  if (roof.label.empty() || roof.peak_flops <= 0) return;
  const double devices = static_cast<double>(jobs::footprint(j).compute_devices());
  s["peak_flops"] = roof.peak_flops * devices;
  s["mfu"] = flops_per_s / (roof.peak_flops * devices);
}

}  // namespace

JobHarness::JobHarness(const RunnerOptions& opts, Communicator& comm, const HarnessOptions& hopts)
    : o_(opts), comm_(comm), hopts_(hopts), rank_(comm.rank()), world_(comm.size()) {
  const jobs::JobParams& j = o_.job;
  if (j.ranks != world_)
    throw BadInput("gridrun-train: the job has ranks=" + std::to_string(j.ranks) + " but was started with " +
                   std::to_string(world_) + " processes (mpirun -np / srun -n must match)");
  StopSignal::install();
  torch::set_num_threads(static_cast<int>(j.threads_per_rank));
  dev_ = select_device(j, comm_);
  // Resolved before anything is written: a missing checkpoint is bad input (exit 2).
  if (!hopts_.checkpoint.empty()) weights_file_ = resolve_checkpoint(hopts_.checkpoint, o_.out_dir);
  if (hopts_.training && gpu()) apply_gpu_settings(j);
  build_data_and_model();
  init_weights();
  if (hopts_.training) {
    // Different dropout masks per rank (like independent workers), reproducible per rank.
    torch::manual_seed(static_cast<std::uint64_t>(j.seed) + 1000003ull * static_cast<std::uint64_t>(rank_));
  }
}

// Same seed everywhere: every rank draws the same data (synthetic) and initial weights.
void JobHarness::build_data_and_model() {
  const jobs::JobParams& j = o_.job;
  torch::manual_seed(static_cast<std::uint64_t>(j.seed));
  data_ = make_dataset(dataset_options(j));
  model_ = make_model(model_spec(j, data_.input));
  model_->to(dev_);
  train_set_ = data_.train;
  test_set_ = data_.test;
  if (!hopts_.training || !gpu()) return;
#ifdef GRIDRUN_HAVE_NCCL
  // Several jobs sharing one GPU (jobs_per_gpu): each caps its caching allocator at its share, so
  // one job's growth fails that job instead of its neighbours. After model->to(dev): the allocator
  // of a device exists only once something was allocated there.
  if (o_.gpu_memory_fraction > 0 && o_.gpu_memory_fraction < 1)
    c10::cuda::CUDACachingAllocator::setMemoryFraction(o_.gpu_memory_fraction, dev_.index());
#endif
  // Device-resident splits: index on the GPU instead of gathering and copying on the host.
  // 4 GiB bounds what a job may pin there (CIFAR-10 is 180 MB as uint8).
  if (data_.train->bytes() + data_.test->bytes() <= (std::int64_t{4} << 30)) {
    if (auto d = data_.train->on_device(dev_)) train_set_ = d;
    if (auto d = data_.test->on_device(dev_)) test_set_ = d;
  }
}

// Rank 0's initial state wins (broadcast), unless a checkpoint's weights are loaded everywhere.
void JobHarness::init_weights() {
  if (!weights_file_.empty()) {
    load_model_weights(weights_file_, *model_);
  } else {
    torch::NoGradGuard ng;
    for (auto& p : model_->parameters()) comm_.broadcast(p.data(), 0);
    for (auto& b : model_->buffers()) comm_.broadcast(b, 0);
  }
  if (!hopts_.training) return;
  if (!o_.init_out.empty() && lead()) {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& p : model_->named_parameters()) named.emplace_back(p.key(), p.value());
    for (const auto& b : model_->named_buffers()) named.emplace_back(b.key(), b.value());
    write_init_weights(o_.init_out, named);
  }
  // channels_last weights after the broadcast (collectives take contiguous tensors).
  channels_last_ = use_channels_last(o_.job);
  if (channels_last_) {
    torch::NoGradGuard ng;
    for (auto& p : model_->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

void JobHarness::open_results(const ResultsStart& start) {
  const auto hosts = comm_.allgather_strings(comm_.host());
  const auto pids = comm_.gather(std::vector<double>{static_cast<double>(::getpid())}, 0);
  if (!lead()) return;
  // Utilisation of every rank process on rank 0's host (ranks elsewhere are recorded as NaN).
  hw::UtilReaderOptions po;
  for (int r = 0; r < world_; ++r)
    po.pids.push_back(hosts[r] == hosts[0] ? static_cast<pid_t>(pids[r]) : pid_t{-1});
  po.gpus = gpu();
  // Processes of the same run on its GPUs (jobs_per_gpu neighbours) are not foreign: those that
  // carry this run's launch token (gridrun run) or this allocation's id (a Slurm task's steps).
  for (const char* name : {run::kLaunchTokenEnv, "SLURM_JOB_ID"})
    if (const char* v = std::getenv(name); v && *v) po.same_run_env.push_back(std::string(name) + "=" + v);
  auto probe = std::make_unique<hw::UtilReader>(po);
  if (!probe->gpus().empty()) gpu_name_ = probe->gpus().front().name;
  fs::create_directories(o_.out_dir);
  results::JobFileInfo info = file_info(o_, comm_, hosts, *model_, *probe);
  info.resume_from_step = start.resume_from_step;
  for (const auto& [k, v] : start.str_attrs) info.str_attrs[k] = v;
  for (const auto& [k, v] : start.int_attrs) info.int_attrs[k] = v;
  writer_ = results::JobWriter::create(o_.out_dir, info);
  if (o_.util_hz > 0) {
    results::JobWriter* w = writer_.get();
    util_ = std::make_unique<hw::UtilSampler>(std::move(probe), hw::SamplerOptions{o_.util_hz},
                                              [w](const results::UtilRow& row) { w->append_util(row); });
  }
}

int JobHarness::run(const std::function<int()>& loop) {
  try {
    return loop();
  } catch (const std::exception& e) {
    failure_ = e.what();
    throw;
  }
}

void JobHarness::finish(results::Status status, const std::string& reason, results::Summary summary) {
  const double peak_rss = comm_.allreduce_max({static_cast<double>(peak_rss_bytes())})[0];
  if (!writer_) return;
  summary["flops_per_sample"] = model_->flops_per_sample();
  summary["model_params"] = static_cast<double>(model_->parameter_count());
  summary["peak_rss_bytes"] = peak_rss;
  add_mfu(summary, o_, gpu_name_);
  if (util_) {
    util_->stop();
    // The GPU conditions it ran under (gpu_foreign_*, gpu_sm_clock_share, gpu_throttle*).
    for (const auto& [k, v] : util_->reader().gpu_conditions().summary()) summary[k] = v;
  }
  writer_->finish(status, reason, summary);
  finished_ = true;
}

JobHarness::~JobHarness() {
  if (!writer_ || finished_) return;
  try {
    if (util_) util_->stop();
    writer_->finish(results::Status::Failed,
                    failure_.empty() ? "gridrun-train ended before the job finished" : failure_,
                    results::Summary{});
  } catch (...) {
    // Already failing; the exception on its way to main() says why.
  }
}

}  // namespace gridrun::runner
