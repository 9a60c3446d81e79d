// The training loop (see trainer.hpp and docs/runner.md).
//
// One step: data (index + normalise + copy to device) -> forward + loss -> backward (gradient hooks
// launch bucket allreduces as buckets fill) -> GradSync::finish (waits only for outstanding
// buckets: "exposed" communication) -> lr schedule + optimizer step (foreach SGD) -> one small
// host allreduce of [stop flag, checkpoint-due flag], which makes all ranks agree on stopping and
// checkpointing at the same step boundary.
//
// Why nothing in the step waits for the device: the step's loss and correct count stay on the
// device, and its phase times are CUDA events; both are read once per --log-every interval (and
// at epoch end, signals and checkpoints), when the interval's rows are written. /steps rows keep
// their meaning (one row per step, the global mean loss of that step); only the moment they are
// computed moves. Per-rank phase timings are gathered to rank 0 at the same time, so straggler
// figures cost one small gather per interval, not per step. On the GPU the step also uses
// device-resident data, cuDNN autotuning, TF32 (job parameters) and optionally a CUDA graph.
#include "gridrun/runner/trainer.hpp"

#include "gridrun/results/probe.hpp"
#include "gridrun/results/roofline.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/cuda.h>
#endif
#include <type_traits>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#include "gridrun/results/sampler.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/runner/checkpoint.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/foreach_sgd.hpp"
#include "gridrun/runner/grad_sync.hpp"
#include "gridrun/runner/model.hpp"
#include "gridrun/runner/init_export.hpp"
#include "gridrun/runner/sampler.hpp"
#include "gridrun/runner/schedule.hpp"
#include "gridrun/runner/signals.hpp"
#include "gridrun/runner/system_info.hpp"
#include "op_profiler.hpp"
#include "run_common.hpp"

namespace gridrun::runner {

namespace detail {

torch::Device select_device(const jobs::JobParams& j, Communicator& comm) {
  torch::Device dev(torch::kCPU);
  const bool gpu = j.device == "gpu";
#ifdef GRIDRUN_HAVE_NCCL
  if (gpu) {
    const auto n = torch::cuda::device_count();
    if (n == 0) throw BadInput("gridrun-train: device=gpu but no CUDA device is visible");
    dev = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(comm.local_rank() % n));
  }
#else
  (void)comm;
  if (gpu)
    throw BadInput("gridrun-train: device=gpu but this build has no CUDA/NCCL support (exit 2)");
#endif
  return dev;
}

results::JobFileInfo file_info(const RunnerOptions& o, const Communicator& comm,
                               const std::vector<std::string>& hosts, const Model& model,
                               const results::UtilProbe& probe, std::int64_t resume_step) {
  results::JobFileInfo info;
  info.id = o.id;
  info.run = o.run;
  info.params_json = jobs::canonical_json(o.params);
  for (const auto& [k, v] : o.params) {
    const std::string key = "param." + k;
    if (auto* b = std::get_if<bool>(&v)) info.int_attrs[key] = *b ? 1 : 0;
    else if (auto* i = std::get_if<std::int64_t>(&v)) info.int_attrs[key] = *i;
    else if (auto* d = std::get_if<double>(&v)) info.float_attrs[key] = *d;
    else info.str_attrs[key] = std::get<std::string>(v);
  }
  std::string joined;
  std::set<std::string> uniq;
  for (const auto& h : hosts) {
    if (uniq.insert(h).second) joined += (joined.empty() ? "" : ",") + h;
  }
  info.str_attrs["hostnames"] = joined;
  info.str_attrs["rank_hosts"] = [&] {
    std::string s;
    for (const auto& h : hosts) s += (s.empty() ? "" : ",") + h;
    return s;
  }();
  info.str_attrs["cpu_model"] = cpu_model();
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
  info.resume_from_step = resume_step;
  return info;
}

void add_mfu(results::Summary& s, const RunnerOptions& o, const std::string& gpu_name) {
  const auto fl = s.find("flops_per_s");
  if (fl == s.end() || !std::isfinite(fl->second) || fl->second <= 0) return;
  const jobs::JobParams& j = o.job;
  results::RooflineOptions ro;
  if (o.peak_tflops > 0) ro.peak_tflops = o.peak_tflops;
  const std::string probe_file =
      !o.probe_file.empty() ? o.probe_file : results::default_probe_path();
  if (j.device == "cpu" && !probe_file.empty() && std::filesystem::exists(probe_file)) {
    try {
      ro.probe = results::read_probe(probe_file);
    } catch (const std::exception& e) {
      // A stale or foreign probe file must not fail a finished job; MFU is then simply absent.
      std::fprintf(stderr, "gridrun-train: warning: ignoring probe %s: %s\n", probe_file.c_str(),
                   e.what());
    }
  }
  results::RoofQuery q;
  q.device = j.device;
  q.precision = j.task == "inference" ? "fp32" : j.precision;
  if (j.device == "gpu" && q.precision == "fp32" && j.tf32) q.precision = "tf32";
  q.ranks = static_cast<double>(j.ranks);
  q.threads_per_rank = static_cast<double>(j.threads_per_rank);
  q.gpu_name = gpu_name;
  const results::Roof roof = results::roof_for(q, ro);
  if (roof.label.empty() || roof.peak_flops <= 0) return;
  const double devices = j.device == "gpu" ? static_cast<double>(j.ranks) : 1.0;
  s["peak_flops"] = roof.peak_flops * devices;
  s["mfu"] = fl->second / (roof.peak_flops * devices);
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Phases of one step, in the order they happen.
enum Phase { kData, kForward, kBackward, kExposed, kOptimizer, kStep, kPhases };

// Host clocks on CPU; CUDA events on GPU (host clocks around asynchronous kernels would measure
// launch time, not work). Each pending step has its own slot, resolved when its interval is
// written: resolving a CUDA event right after recording it would stall the host on the device.
// mark(p) ends phase p of the current slot.
class StepTimer {
 public:
  explicit StepTimer(bool cuda) : cuda_(cuda) {}
  void start(std::size_t slot) {
    if (slots_.size() <= slot) slots_.resize(slot + 1);
    cur_ = &slots_[slot];
    t0_ = last_ = Clock::now();
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) cur_->ev[kPhases].record();
#endif
  }
  void mark(Phase p) {
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) {
      cur_->ev[p].record();
      return;
    }
#endif
    auto now = Clock::now();
    if (p == kStep) {
      cur_->t[kStep] = std::chrono::duration<double>(now - t0_).count();
    } else {
      cur_->t[p] = std::chrono::duration<double>(now - last_).count();
    }
    last_ = now;
  }
  // Phase durations of a slot; kStep is the whole step (the others plus the flags exchange).
  std::array<double, kPhases> resolve(std::size_t slot) {
    Slot& s = slots_.at(slot);
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) {
      s.ev[kStep].synchronize();
      at::cuda::CUDAEvent* prev = &s.ev[kPhases];
      for (int p = 0; p <= kOptimizer; ++p) {
        s.t[p] = prev->elapsed_time(s.ev[p]) / 1000.0;
        prev = &s.ev[p];
      }
      s.t[kStep] = s.ev[kPhases].elapsed_time(s.ev[kStep]) / 1000.0;
    }
#endif
    return s.t;
  }

 private:
  struct Slot {
    std::array<double, kPhases> t{};
#ifdef GRIDRUN_HAVE_NCCL
    std::array<at::cuda::CUDAEvent, kPhases + 1> ev{
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
        at::cuda::CUDAEvent(cudaEventDefault)};
#endif
  };
  bool cuda_;
  std::deque<Slot> slots_;  // deque: slots never move, cur_ stays valid while it grows
  Slot* cur_ = nullptr;
  Clock::time_point t0_, last_;
};

#ifdef GRIDRUN_HAVE_NCCL
// CUDA autocast on/off; the API was renamed in LibTorch 2.4 (device-type arguments).
void set_cuda_autocast(bool on, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (on) at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, on);
#else
  if (on) at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(on);
#endif
  if (!on) at::autocast::clear_cache();
}
#endif

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const jobs::JobParams& j,
                                                        std::vector<torch::Tensor> params,
                                                        double lr) {
  if (j.optimizer == "sgd") {
    if (j.nesterov && j.momentum <= 0)
      throw BadInput("gridrun-train: nesterov=true needs momentum > 0");
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(j.momentum).nesterov(j.nesterov)
                    .weight_decay(j.weight_decay));
  }
  if (j.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(lr).weight_decay(j.weight_decay));
  if (j.optimizer == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(lr).weight_decay(j.weight_decay));
  throw BadInput("gridrun-train: unknown optimizer '" + j.optimizer + "' (known: sgd, adam, adamw)");
}

#ifdef GRIDRUN_HAVE_NCCL
// Eager steps before the capture: cuDNN autotuning, lazy initialisation and the first momentum
// buffers happen outside the graph.
constexpr std::int64_t kGraphWarmupSteps = 3;

// cuda_graph=true: the whole step (forward, loss, backward, foreach SGD with the lr read from a
// device scalar) captured once on a side stream and replayed from static input buffers. Why: a
// small model's eager step is bound by kernel launches from the host (a few microseconds each);
// a replay launches the step's hundreds of kernels as one. Needs ranks=1 (the allreduce is not
// captured), optimizer=sgd and no fp16 loss scaling (its overflow check reads the host).
class GraphStep {
 public:
  GraphStep(Model& model, ForeachSgd& sgd, torch::optim::Optimizer& opt, bool autocast,
            at::ScalarType dtype)
      : model_(model), sgd_(sgd), opt_(opt), autocast_(autocast), dtype_(dtype) {}
  bool ready() const { return captured_; }
  const at::Tensor& loss() const { return loss_; }
  const at::Tensor& correct() const { return correct_; }

  void capture(const at::Tensor& x, const at::Tensor& y, double lr) {
    static_x_ = at::empty_like(x);
    static_y_ = at::empty_like(y);
    neg_lr_ = at::full({}, -lr, x.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous));
    opt_.zero_grad();  // gradients None: backward allocates them in the graph's pool
    for (auto& p : model_.parameters()) p.mutable_grad() = at::Tensor();
    auto cur = at::cuda::getCurrentCUDAStream();
    auto side = at::cuda::getStreamFromPool();
    at::cuda::CUDAEvent before, after;
    before.record(cur);
    before.block(side);
    {
      at::cuda::CUDAStreamGuard guard(side);
      graph_.capture_begin();
      if (autocast_) {
        at::autocast::set_autocast_cache_enabled(false);  // cached casts would go stale
        set_cuda_autocast(true, dtype_);
      }
      auto out = model_.forward(static_x_);
      auto loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), static_y_);
      if (autocast_) set_cuda_autocast(false, at::kFloat);
      loss.backward();
      sgd_.step(lr, neg_lr_);
      {
        torch::NoGradGuard ng;
        loss_ = loss.detach();
        correct_ = out.detach().argmax(1).eq(static_y_).sum();
      }
      graph_.capture_end();
    }
    after.record(side);
    after.block(cur);
    captured_ = true;
  }

  void replay(const at::Tensor& x, const at::Tensor& y, double lr) {
    static_x_.copy_(x, /*non_blocking=*/true);
    static_y_.copy_(y, true);
    neg_lr_.fill_(-lr);
    graph_.replay();
  }

 private:
  Model& model_;
  ForeachSgd& sgd_;
  torch::optim::Optimizer& opt_;
  bool autocast_;
  at::ScalarType dtype_;
  at::cuda::CUDAGraph graph_;
  at::Tensor static_x_, static_y_, neg_lr_, loss_, correct_;
  bool captured_ = false;
};
#endif

// Rank 0 touches this file at most once a second from the training loop (never from a side
// thread, so a hung loop stops it); `gridrun run` ends a job whose heartbeat went stale.
class Heartbeat {
 public:
  explicit Heartbeat(std::string path) : path_(std::move(path)) { beat(0, true); }
  void beat(std::int64_t step, bool force = false) {
    if (path_.empty()) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    // Overwritten in place: a torn write is harmless, the scheduler reads only the mtime.
    if (std::FILE* f = std::fopen(path_.c_str(), "w")) {
      std::fprintf(f, "%lld\n", static_cast<long long>(step));
      std::fclose(f);
    }
  }

 private:
  std::string path_;
  Clock::time_point last_{};
};

// GPU settings of the job, applied once before the model runs. TF32 policy: `tf32: true` (the
// default) lets fp32 convolutions and matmuls use TF32 tensor cores (PyTorch's defaults allow it
// for cuDNN convolutions only); `tf32: false` keeps both in full fp32, for exact comparisons.
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

// channels_last for convolution nets in half precision on the GPU (tensor-core kernels want NHWC);
// fp32 and the CPU stay NCHW unless asked.
bool use_channels_last(const jobs::JobParams& j) {
  if (j.device != "gpu" || !conv_model(j.model)) return false;
  if (j.memory_format == "channels_last") return true;
  return j.memory_format == "auto" && j.precision != "fp32";
}

void dump_params(const std::string& path, Model& model) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write --dump-params file " + path);
  for (const auto& p : model.parameters()) {
    auto c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.nbytes()));
  }
  if (!out) throw std::runtime_error("short write to --dump-params file " + path);
}

struct EvalResult {
  double loss = kNaN, acc = kNaN;
};

EvalResult evaluate(Model& model, const Dataset& test, Communicator& comm, torch::Device dev,
                    std::int64_t batch) {
  torch::NoGradGuard ng;
  model.eval();
  const auto idx = eval_shard(test.size(), comm.rank(), comm.size());
  double loss = 0, correct = 0;
  // On a GPU the sums stay on the device (one read at the end); on the CPU .item() costs nothing
  // and keeps the historical double accumulation bit for bit.
  at::Tensor dloss, dcorrect;
  if (!dev.is_cpu()) {
    dloss = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(dev));
    dcorrect = at::zeros({}, at::TensorOptions().dtype(at::kLong).device(dev));
  }
  for (std::size_t i = 0; i < idx.size(); i += static_cast<std::size_t>(batch)) {
    std::vector<std::int64_t> part(idx.begin() + i,
                                   idx.begin() + std::min(idx.size(), i + static_cast<std::size_t>(batch)));
    Batch b = test.get(part);
    auto x = b.x.to(dev, true), y = b.y.to(dev, true);
    auto out = model.forward(x).to(torch::kFloat32);
    auto l = torch::nn::functional::cross_entropy(
        out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    auto c = out.argmax(1).eq(y).sum();
    if (dev.is_cpu()) {
      loss += l.item<double>();
      correct += c.item<double>();
    } else {
      dloss.add_(l.to(at::kDouble));
      dcorrect.add_(c);
    }
  }
  if (!dev.is_cpu()) {
    loss = dloss.item<double>();
    correct = dcorrect.item<double>();
  }
  model.train();
  auto tot = comm.allreduce_sum(std::vector<double>{loss, correct, static_cast<double>(idx.size())});
  if (tot[2] <= 0) return {};
  return {tot[0] / tot[2], tot[1] / tot[2]};
}

// Rank 0's step rows wait here until the per-rank timings of their interval are gathered.
// Every rank keeps its steps' device-side loss and correct count and host-side sample count; rank 0
// also keeps the rows' host-side fields.
struct PendingRows {
  std::vector<results::StepRow> rows;   // rank 0: step, epoch, wall_s, comm_s
  std::vector<at::Tensor> loss;         // this rank's mean loss of the step (device scalar)
  std::vector<at::Tensor> correct;      // this rank's correct predictions (device scalar)
  std::vector<double> n;                // this rank's samples
  std::size_t size() const { return n.size(); }
};

}  // namespace

int train(const RunnerOptions& o, Communicator& comm) {
  const jobs::JobParams& j = o.job;
  const int rank = comm.rank(), world = comm.size();
  const bool lead = rank == 0;
  if (j.ranks != world)
    throw BadInput("gridrun-train: the job has ranks=" + std::to_string(j.ranks) +
                   " but was started with " + std::to_string(world) +
                   " processes (mpirun -np / srun -n must match)");
  StopSignal::install();
  torch::set_num_threads(static_cast<int>(j.threads_per_rank));

  const bool gpu = j.device == "gpu";
  const torch::Device dev = detail::select_device(j, comm);
  if (j.cuda_graph && (!gpu || world != 1))
    throw BadInput("gridrun-train: cuda_graph=true needs device=gpu and ranks=1 (the gradient "
                   "allreduce is not captured)");
  if (gpu) apply_gpu_settings(j);

  // Data and model: same seed everywhere, then rank 0's initial state wins (broadcast).
  torch::manual_seed(static_cast<std::uint64_t>(j.seed));
  DataSplits data = make_dataset(DatasetOptions{j.dataset, j.data_dir, j.train_samples,
                                                j.test_samples, is_text_model(j.model)});
  ModelSpec spec{j.model,           data.input.channels, data.input.height, data.input.width,
                 data.input.num_classes, data.input.vocab, data.input.seq_len};
  std::shared_ptr<Model> model = make_model(spec);
  model->to(dev);
#ifdef GRIDRUN_HAVE_NCCL
  // Several jobs sharing one GPU (jobs_per_gpu): each caps its caching allocator at its share, so
  // one job's growth fails that job instead of its neighbours. After model->to(dev): the allocator
  // of a device exists only once something was allocated there.
  if (gpu && o.gpu_memory_fraction > 0 && o.gpu_memory_fraction < 1)
    c10::cuda::CUDACachingAllocator::setMemoryFraction(o.gpu_memory_fraction, dev.index());
#endif
  // Device-resident splits: index on the GPU instead of gathering and copying on the host.
  // 4 GiB bounds what a job may pin there (CIFAR-10 is 180 MB as uint8).
  std::shared_ptr<Dataset> train_set = data.train, test_set = data.test;
  if (gpu && data.train->bytes() + data.test->bytes() <= (std::int64_t{4} << 30)) {
    if (auto d = data.train->on_device(dev)) train_set = d;
    if (auto d = data.test->on_device(dev)) test_set = d;
  }
  {
    torch::NoGradGuard ng;
    for (auto& p : model->parameters()) comm.broadcast(p.data(), 0);
    for (auto& b : model->buffers()) comm.broadcast(b, 0);
  }
  if (!o.init_out.empty() && lead) {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
    for (const auto& b : model->named_buffers()) named.emplace_back(b.key(), b.value());
    write_init_weights(o.init_out, named);
  }
  // channels_last weights after the broadcast (collectives take contiguous tensors).
  const bool channels_last = use_channels_last(j);
  if (channels_last) {
    torch::NoGradGuard ng;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
  // Different dropout masks per rank (like independent workers), reproducible per rank.
  torch::manual_seed(static_cast<std::uint64_t>(j.seed) + 1000003ull * static_cast<std::uint64_t>(rank));

  EpochSampler sampler(data.train->size(), j.batch_per_rank, rank, world,
                       static_cast<std::uint64_t>(j.seed));
  const std::int64_t spe = sampler.steps_per_epoch();
  std::int64_t total_steps = j.epochs > 0 ? j.epochs * spe : j.max_steps;
  if (j.max_steps > 0) total_steps = std::min(total_steps, j.max_steps);
  const std::int64_t total_epochs = j.epochs > 0 ? j.epochs : (total_steps + spe - 1) / spe;

  const double base_lr = j.scale_lr ? j.lr * static_cast<double>(j.global_batch) / 256.0 : j.lr;
  LrSchedule schedule(ScheduleOptions{j.lr_schedule, base_lr, j.warmup_steps, total_steps});
  auto params = model->parameters();
  auto opt = make_optimizer(j, params, base_lr);
  std::unique_ptr<ForeachSgd> fast_sgd;
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(opt.get()))
    fast_sgd = std::make_unique<ForeachSgd>(*sgd, params);
  GradSync sync(params, comm, GradSyncOptions{j.bucket_mb, j.overlap});

  Checkpointer ckpt(o.checkpoint_dir, comm);
  TrainState st;
  st.world = world;
  bool resumed = false;
  if (o.resume) resumed = ckpt.load(*model, *opt, st);

  // Results (rank 0) and utilisation sampling of every local rank's process.
  const auto hosts = comm.allgather_strings(comm.host());
  const auto pids = comm.gather(std::vector<double>{static_cast<double>(getpid())}, 0);
  std::unique_ptr<results::JobWriter> writer;
  std::unique_ptr<results::UtilSampler> util;
  std::string gpu_name;  // first device, for the MFU peak (the probe moves into the sampler)
  if (lead) {
    results::ProbeOptions po;
    for (int r = 0; r < world; ++r)
      po.pids.push_back(hosts[r] == hosts[0] ? static_cast<pid_t>(pids[r]) : pid_t{-1});
    po.gpus = gpu;
    auto probe = std::make_unique<results::UtilProbe>(po);
    if (!probe->gpus().empty()) gpu_name = probe->gpus().front().name;
    fs::create_directories(o.out_dir);
    // The writer keeps rows of steps before resume_from_step (1-based steps: the first step this
    // process will run); rows a killed run wrote after its last checkpoint are dropped and redone.
    auto info = detail::file_info(o, comm, hosts, *model, *probe,
                                  resumed ? st.global_step + 1 : 0);
    info.int_attrs["grad_buckets"] = static_cast<std::int64_t>(sync.num_buckets());
    writer = results::JobWriter::create(o.out_dir, info);
    if (o.util_hz > 0) {
      results::JobWriter* w = writer.get();
      util = std::make_unique<results::UtilSampler>(
          std::move(probe), results::SamplerOptions{o.util_hz},
          [w](const results::UtilRow& row) { w->append_util(row); });
    }
    if (!o.quiet)
      std::printf("gridrun-train %s: %s on %s, %d rank(s), %zu bucket(s), %lld steps/epoch, "
                  "%lld steps%s\n",
                  o.id.c_str(), j.model.c_str(), j.dataset.c_str(), world, sync.num_buckets(),
                  static_cast<long long>(spe), static_cast<long long>(total_steps),
                  resumed ? (", resumed at step " + std::to_string(st.global_step)).c_str() : "");
  }

  const auto run_start = Clock::now();
  // Training wall time: what earlier processes of this job spent (from the checkpoint) plus ours.
  const double wall_before = st.wall_s;
  auto wall = [&] { return wall_before + seconds_since(run_start); };
  auto last_flush = Clock::now(), last_ckpt = Clock::now();
  PendingRows pending;
  std::vector<double> summary_step_s, rank_max_step_s;
  double timing_samples = 0, timing_time = 0;
  StepTimer timer(gpu);
  struct {
    bool started = false;
    Clock::time_point t0, t1;
    double samples = 0;
  } wall_tp;
  Heartbeat heartbeat(lead ? o.heartbeat_file : std::string());
  // profile_steps: rank 0 records the operators of the steps right after the timing warm-up.
  OpProfiler profiler(gpu);
  const std::int64_t profile_from = j.timing_warmup_steps,
                     profile_to = j.timing_warmup_steps + j.profile_steps;
  const bool fp16 = gpu && j.precision == "fp16";
  const bool autocast = gpu && j.precision != "fp32";
#ifdef GRIDRUN_HAVE_NCCL
  std::unique_ptr<GraphStep> graph;
  if (j.cuda_graph) {
    if (!fast_sgd || fp16)
      throw BadInput("gridrun-train: cuda_graph=true needs optimizer=sgd and precision fp32 or "
                     "bf16 (fp16 loss scaling reads the host every step)");
    graph = std::make_unique<GraphStep>(*model, *fast_sgd, *opt, autocast,
                                        j.precision == "bf16" ? at::kBFloat16 : at::kHalf);
  }
#endif

  // Writes the pending steps (collective): one device read of the interval's loss and correct
  // counts, one host allreduce of them, one gather of the per-rank phase times to rank 0.
  auto drain_rows = [&] {
    const std::size_t k = pending.size();
    if (k == 0) return;
    std::vector<double> metric(3 * k);  // per step: loss * n, correct, n (this rank)
    {
      // One device-to-host copy (one wait for the device) for the whole interval: k losses, then
      // k correct counts.
      auto host = at::cat({at::stack(at::TensorList(pending.loss)).to(at::kDouble),
                           at::stack(at::TensorList(pending.correct)).to(at::kDouble)})
                      .to(at::kCPU)
                      .contiguous();
      const double* lp = host.data_ptr<double>();
      const double* cp = lp + k;
      for (std::size_t i = 0; i < k; ++i) {
        metric[3 * i] = lp[i] * pending.n[i];
        metric[3 * i + 1] = cp[i];
        metric[3 * i + 2] = pending.n[i];
      }
    }
    const auto red = world > 1 ? comm.allreduce_sum(metric) : metric;
    // Host wall clock at this synchronised point: throughput as a user's stopwatch sees it
    // (launch gaps between steps included), from the first interval after the warm-up on.
    {
      double samples = 0;
      for (std::size_t i = 0; i < k; ++i) samples += red[3 * i + 2];
      const auto now = Clock::now();
      if (st.global_step - static_cast<std::int64_t>(k) >= j.timing_warmup_steps) {
        if (!wall_tp.started) {
          wall_tp.started = true;
          wall_tp.t0 = now;
        } else {
          wall_tp.samples += samples;
          wall_tp.t1 = now;
        }
      }
    }
    std::vector<double> mine;
    mine.reserve(k * kPhases);
    std::vector<std::array<double, kPhases>> times(k);
    for (std::size_t i = 0; i < k; ++i) {
      times[i] = timer.resolve(i);
      mine.insert(mine.end(), times[i].begin(), times[i].end());
    }
    auto all = comm.gather(mine, 0);
    for (std::size_t i = 0; i < k; ++i) {
      st.epoch_loss_sum += red[3 * i];
      st.epoch_correct += red[3 * i + 1];
      st.epoch_count += red[3 * i + 2];
      const std::int64_t step = st.global_step - static_cast<std::int64_t>(k - 1 - i);
      if (step > j.timing_warmup_steps) {
        timing_samples += red[3 * i + 2];
        timing_time += times[i][kStep];
      }
    }
    if (lead) {
      for (std::size_t i = 0; i < k; ++i) {
        auto& row = pending.rows[i];
        const auto& t = times[i];
        row.loss = red[3 * i] / red[3 * i + 2];
        row.step_s = t[kStep];
        row.samples_per_s = red[3 * i + 2] / t[kStep];
        row.data_s = t[kData];
        row.forward_s = t[kForward];
        row.backward_s = t[kBackward];
        row.optimizer_s = t[kOptimizer];
        row.exposed_comm_s = t[kExposed];
        row.rank_step_s.resize(world);
        double mx = 0;
        for (int r = 0; r < world; ++r) {
          row.rank_step_s[r] = all[(r * k + i) * kPhases + kStep];
          mx = std::max(mx, row.rank_step_s[r]);
        }
        if (row.step > j.timing_warmup_steps) rank_max_step_s.push_back(mx);
        writer->append_step(row);
        if (!o.quiet && (row.step % o.log_every == 0 || row.step == total_steps))
          std::printf("step %lld/%lld epoch %lld/%lld loss %.4f acc %.3f %.0f samples/s "
                      "step %.1f ms comm %.1f ms\n",
                      static_cast<long long>(row.step), static_cast<long long>(total_steps),
                      static_cast<long long>(row.epoch), static_cast<long long>(total_epochs),
                      row.loss, red[3 * i + 1] / red[3 * i + 2], row.samples_per_s,
                      1e3 * row.step_s, 1e3 * row.exposed_comm_s),
              std::fflush(stdout);
      }
    }
    pending.rows.clear();
    pending.loss.clear();
    pending.correct.clear();
    pending.n.clear();
  };
  auto flush = [&] {
    if (lead) writer->flush();
    last_flush = Clock::now();
  };

  auto finish = [&](results::Status status, const std::string& reason) {
    drain_rows();
    profiler.stop();
    const double peak_rss = comm.allreduce_max({static_cast<double>(peak_rss_bytes())})[0];
    if (!lead) return;
    results::Summary s;
    s["flops_per_sample"] = model->flops_per_sample();
    s["train_flops_per_sample"] = 3.0 * model->flops_per_sample();
    s["bytes_per_sample"] = model->bytes_per_sample(j.batch_per_rank, j.precision == "fp32" ? 4.0 : 2.0);
    const double sps = timing_time > 0 ? timing_samples / timing_time : kNaN;
    s["flops_per_s"] = 3.0 * model->flops_per_sample() * sps;
    if (wall_tp.samples > 0)
      s["samples_per_s_wall"] =
          wall_tp.samples / std::chrono::duration<double>(wall_tp.t1 - wall_tp.t0).count();
    s["model_params"] = static_cast<double>(model->parameter_count());
    s["peak_rss_bytes"] = peak_rss;
    detail::add_mfu(s, o, gpu_name);
    if (!rank_max_step_s.empty()) {
      double sum = 0;
      for (double v : rank_max_step_s) sum += v;
      s["rank_max_step_s_mean"] = sum / static_cast<double>(rank_max_step_s.size());
    }
    if (!profiler.empty()) {
      writer->set_profile(profiler.ops());
      profiler.write_chrome_trace((fs::path(o.out_dir) / (o.id + ".profile.json")).string(), rank);
    }
    if (util) util->stop();
    writer->finish(status, reason, s);
  };

  if (!resumed) st.best_test_acc = -1;
  results::Status status = results::Status::Completed;
  std::string reason = "completed";
  try {
    // A checkpoint taken inside an epoch (signal, timed) leaves that epoch's end pending, even at
    // the last step: done only once the last epoch end has run (it resets step_in_epoch to 0).
    bool done = st.global_step >= total_steps && st.step_in_epoch == 0;
    while (!done && st.epoch < total_epochs) {
      const auto epoch_start = Clock::now();
      const double epoch_s_before = st.epoch_s;
      for (; st.step_in_epoch < spe && st.global_step < total_steps; ++st.step_in_epoch) {
        if (lead && st.global_step >= profile_from && st.global_step < profile_to) profiler.start();
        timer.start(pending.size());
        Batch b = train_set->get(sampler.indices(st.epoch, st.step_in_epoch));
        auto x = b.x.to(dev, /*non_blocking=*/true), y = b.y.to(dev, true);
        if (channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        timer.mark(kData);

        at::Tensor loss, correct;
        GradSyncStats cs;
        const double lr = schedule.lr_at(st.global_step);
#ifdef GRIDRUN_HAVE_NCCL
        if (graph && (graph->ready() || st.global_step >= kGraphWarmupSteps)) {
          // The first time: capture records the work without running it; the replay runs it.
          if (!graph->ready()) graph->capture(x, y, lr);
          graph->replay(x, y, lr);
          loss = graph->loss().clone();
          correct = graph->correct().clone();
          for (Phase p : {kForward, kBackward, kExposed, kOptimizer}) timer.mark(p);
        } else
#endif
        {
#ifdef GRIDRUN_HAVE_NCCL
          if (autocast) set_cuda_autocast(true, j.precision == "bf16" ? at::kBFloat16 : at::kHalf);
#endif
          auto out = model->forward(x);
          loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), y);
#ifdef GRIDRUN_HAVE_NCCL
          if (autocast) set_cuda_autocast(false, at::kFloat);
#endif
          timer.mark(kForward);

          sync.begin_step();
          (fp16 ? loss * st.loss_scale : loss).backward();
          timer.mark(kBackward);
          cs = sync.finish();
          timer.mark(kExposed);

          // fp16: unscale, and skip the step (halving the scale) on overflow; gradients are
          // already averaged, so every rank takes the same decision. One device read per step.
          bool step_ok = true;
          if (fp16) {
            torch::NoGradGuard ng;
            std::vector<at::Tensor> grads;
            for (auto& p : params)
              if (p.grad().defined()) grads.push_back(p.grad());
            auto found_inf = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev));
            auto inv = at::full({1}, 1.0 / st.loss_scale,
                                at::TensorOptions().dtype(at::kFloat).device(dev));
            at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv);
            step_ok = found_inf.item<float>() == 0.0f;
            st.loss_scale = step_ok ? st.loss_scale : st.loss_scale / 2;
          }
          for (auto& g : opt->param_groups()) g.options().set_lr(lr);
          if (step_ok) {
            if (fast_sgd) fast_sgd->step(lr);
            else opt->step();
          }
          if (!sync.zero_grad()) opt->zero_grad();
          timer.mark(kOptimizer);
          torch::NoGradGuard ng;
          correct = out.detach().argmax(1).eq(y).sum();
          loss = loss.detach();
        }

        ++st.global_step;
        // Test hooks: deterministic interruption, failure and hang (docs/runner.md).
        if (o.stop_after_step > 0 && st.global_step == o.stop_after_step && lead) std::raise(SIGTERM);
        if (o.fail_at_step > 0 && st.global_step == o.fail_at_step && rank == o.fail_rank)
          throw std::runtime_error("injected failure (--fail-at-step " +
                                   std::to_string(o.fail_at_step) + ")");
        if (o.hang_at_step > 0 && st.global_step == o.hang_at_step && rank == o.fail_rank)
          for (;;) std::this_thread::sleep_for(std::chrono::hours(1));

        const bool ckpt_due = lead && j.checkpoint_minutes > 0 &&
                              seconds_since(last_ckpt) >= j.checkpoint_minutes * 60.0;
        auto red = comm.allreduce_sum(std::vector<double>{StopSignal::received() ? 1.0 : 0.0,
                                                          ckpt_due ? 1.0 : 0.0});
        timer.mark(kStep);
        if (st.global_step >= profile_to) profiler.stop();
        pending.loss.push_back(loss);
        pending.correct.push_back(correct);
        pending.n.push_back(static_cast<double>(y.size(0)));
        if (lead) {
          results::StepRow row;
          row.step = st.global_step;
          row.epoch = st.epoch + 1;
          row.wall_s = wall();
          row.comm_s = cs.comm_s;
          pending.rows.push_back(row);
        }
        if (static_cast<std::int64_t>(pending.size()) >= o.log_every) drain_rows();
        if (lead && seconds_since(last_flush) >= 30.0) flush();
        // Liveness for the scheduler's watchdog (gridrun run): at most one write a second.
        heartbeat.beat(st.global_step);

        if (red[0] > 0) {  // some rank got SIGTERM/SIGUSR1: all stop here, checkpoint, exit 75
          drain_rows();
          ++st.step_in_epoch;
          st.epoch_s = epoch_s_before + seconds_since(epoch_start);
          st.wall_s = wall();  // only saved below; the process exits after this checkpoint
          // The epoch is not advanced even after its last step: its end (evaluation, epoch row,
          // epoch sums reset) has not run yet, and the resumed process runs it first.
          ckpt.save(*model, *opt, st);
          const std::string msg = "interrupted by signal; checkpoint at step " +
                                  std::to_string(st.global_step) + " in " + ckpt.latest() +
                                  " (rerun with --resume)";
          if (lead && !o.quiet) std::printf("gridrun-train: %s\n", msg.c_str());
          finish(results::Status::Interrupted, msg);
          return kExitInterrupted;
        }
        if (red[1] > 0) {
          drain_rows();
          TrainState mid = st;
          ++mid.step_in_epoch;
          mid.epoch_s = epoch_s_before + seconds_since(epoch_start);
          mid.wall_s = wall();  // epoch not advanced: see the signal path above
          ckpt.save(*model, *opt, mid);
          last_ckpt = Clock::now();
        }
      }
      // Epoch end (or max_steps reached inside the epoch: a partial last epoch is closed the same
      // way, so every run ends with an epoch row and a final evaluation): evaluation, epoch row,
      // flush, checkpoint.
      const bool partial = st.step_in_epoch < spe;
      st.epoch_s = epoch_s_before + seconds_since(epoch_start);
      profiler.stop();  // a window crossing the epoch end resumes at the next step, without eval
      drain_rows();
      EvalResult ev;
      const bool eval_now = j.eval_every > 0 && ((st.epoch + 1) % j.eval_every == 0 ||
                                                 st.epoch + 1 == total_epochs || partial);
      if (eval_now) ev = evaluate(*model, *test_set, comm, dev, std::max<std::int64_t>(j.batch_per_rank, 256));
      if (lead) {
        results::EpochRow er;
        er.epoch = st.epoch + 1;
        er.train_loss = st.epoch_count > 0 ? st.epoch_loss_sum / st.epoch_count : kNaN;
        er.train_acc = st.epoch_count > 0 ? st.epoch_correct / st.epoch_count : kNaN;
        er.test_loss = ev.loss;
        er.test_acc = ev.acc;
        er.epoch_s = st.epoch_s;
        er.wall_s = wall();
        writer->append_epoch(er);
        if (!o.quiet)
          std::printf("epoch %lld/%lld train loss %.4f acc %.3f test loss %.4f acc %.3f (%.1f s)\n",
                      static_cast<long long>(er.epoch), static_cast<long long>(total_epochs),
                      er.train_loss, er.train_acc, er.test_loss, er.test_acc, er.epoch_s),
              std::fflush(stdout);
      }
      flush();
      if (eval_now) st.best_test_acc = std::max(st.best_test_acc, ev.acc);
      const bool target = j.target_accuracy > 0 && eval_now && ev.acc >= j.target_accuracy;
      ++st.epoch;
      st.step_in_epoch = 0;
      st.epoch_loss_sum = st.epoch_correct = st.epoch_count = st.epoch_s = 0;
      {
        // Epoch-end checkpoint, also after the last epoch: a finished job's final weights are
        // what `task: inference` with `checkpoint: <job id>` loads.
        TrainState saved = st;
        saved.wall_s = wall();
        ckpt.save(*model, *opt, saved);
        last_ckpt = Clock::now();
      }
      if (target) {
        status = results::Status::TargetReached;
        reason = "target_accuracy " + std::to_string(j.target_accuracy) + " reached at epoch " +
                 std::to_string(st.epoch) + " (test acc " + std::to_string(ev.acc) + ")";
        done = true;
      }
      if (st.global_step >= total_steps || partial) done = true;
    }
    if (!o.dump_params.empty() && lead) dump_params(o.dump_params, *model);
    finish(status, reason);
  } catch (const BadInput&) {
    throw;
  } catch (const std::exception& e) {
    if (lead && writer) {
      try {
        if (util) util->stop();
        writer->finish(results::Status::Failed, e.what(), results::Summary{});
      } catch (...) {
      }
    }
    throw;
  }
  return kExitCompleted;
}

}  // namespace gridrun::runner
