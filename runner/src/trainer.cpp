// The training loop (see trainer.hpp and docs/runner.md).
//
// One step: data (index + normalise + copy to device) -> forward + loss -> backward (gradient hooks
// launch bucket allreduces as buckets fill) -> GradSync::finish (waits only for outstanding
// buckets: "exposed" communication) -> lr schedule + optimizer step -> one small allreduce of
// [loss sum, correct, samples, stop flag, checkpoint-due flag], which gives the global loss and
// makes all ranks agree on stopping and checkpointing at the same step boundary.
// Per-rank phase timings are kept locally and gathered to rank 0 every --log-every steps, so the
// straggler figures cost one small gather per interval, not per step.
#include "gridrun/runner/trainer.hpp"

#include "gridrun/results/probe.hpp"
#include "gridrun/results/roofline.hpp"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>
#include <torch/version.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/cuda.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include "gridrun/results/sampler.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/runner/checkpoint.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/grad_sync.hpp"
#include "gridrun/runner/model.hpp"
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
// launch time, not work). mark(p) ends phase p.
class StepTimer {
 public:
  explicit StepTimer(bool cuda) : cuda_(cuda) {}
  void start() {
    t0_ = last_ = Clock::now();
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) ev_[kPhases].record();
#endif
  }
  void mark(Phase p) {
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) {
      ev_[p].record();
      return;
    }
#endif
    auto now = Clock::now();
    t_[p] = std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  // Phase durations; the whole step (kStep) is the sum of the others plus the metrics exchange.
  std::array<double, kPhases> resolve() {
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) {
      ev_[kStep].synchronize();
      at::cuda::CUDAEvent* prev = &ev_[kPhases];
      for (int p = 0; p <= kOptimizer; ++p) {
        t_[p] = prev->elapsed_time(ev_[p]) / 1000.0;
        prev = &ev_[p];
      }
      t_[kStep] = ev_[kPhases].elapsed_time(ev_[kStep]) / 1000.0;
      return t_;
    }
#endif
    t_[kStep] = std::chrono::duration<double>(last_ - t0_).count();
    return t_;
  }

 private:
  bool cuda_;
  Clock::time_point t0_, last_;
  std::array<double, kPhases> t_{};
#ifdef GRIDRUN_HAVE_NCCL
  std::array<at::cuda::CUDAEvent, kPhases + 1> ev_{
      at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
      at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
      at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault),
      at::cuda::CUDAEvent(cudaEventDefault)};
#endif
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
  for (std::size_t i = 0; i < idx.size(); i += static_cast<std::size_t>(batch)) {
    std::vector<std::int64_t> part(idx.begin() + i,
                                   idx.begin() + std::min(idx.size(), i + static_cast<std::size_t>(batch)));
    Batch b = test.get(part);
    auto x = b.x.to(dev), y = b.y.to(dev);
    auto out = model.forward(x).to(torch::kFloat32);
    loss += torch::nn::functional::cross_entropy(
                out, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>();
    correct += out.argmax(1).eq(y).sum().item<double>();
  }
  model.train();
  auto tot = comm.allreduce_sum(std::vector<double>{loss, correct, static_cast<double>(idx.size())});
  if (tot[2] <= 0) return {};
  return {tot[0] / tot[2], tot[1] / tot[2]};
}

// Rank 0's step rows wait here until the per-rank timings of their interval are gathered.
struct PendingRows {
  std::vector<results::StepRow> rows;
  std::vector<std::array<double, kPhases>> mine;  // this rank's phase times, same order
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

  // Data and model: same seed everywhere, then rank 0's initial state wins (broadcast).
  torch::manual_seed(static_cast<std::uint64_t>(j.seed));
  DataSplits data = make_dataset(DatasetOptions{j.dataset, j.data_dir, j.train_samples,
                                                j.test_samples, is_text_model(j.model)});
  ModelSpec spec{j.model,           data.input.channels, data.input.height, data.input.width,
                 data.input.num_classes, data.input.vocab, data.input.seq_len};
  std::shared_ptr<Model> model = make_model(spec);
  model->to(dev);
  {
    torch::NoGradGuard ng;
    for (auto& p : model->parameters()) comm.broadcast(p.data(), 0);
    for (auto& b : model->buffers()) comm.broadcast(b, 0);
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
  // profile_steps: rank 0 records the operators of the steps right after the timing warm-up.
  OpProfiler profiler(gpu);
  const std::int64_t profile_from = j.timing_warmup_steps,
                     profile_to = j.timing_warmup_steps + j.profile_steps;
  const bool fp16 = gpu && j.precision == "fp16";
  const bool autocast = gpu && j.precision != "fp32";

  // Gathers the per-rank timings of the pending rows and writes them (collective).
  auto drain_rows = [&] {
    const std::size_t k = pending.mine.size();
    std::vector<double> mine;
    mine.reserve(k * kPhases);
    for (const auto& a : pending.mine) mine.insert(mine.end(), a.begin(), a.end());
    auto all = comm.gather(mine, 0);
    if (lead) {
      for (std::size_t i = 0; i < k; ++i) {
        auto& row = pending.rows[i];
        row.rank_step_s.resize(world);
        double mx = 0;
        for (int r = 0; r < world; ++r) {
          row.rank_step_s[r] = all[(r * k + i) * kPhases + kStep];
          mx = std::max(mx, row.rank_step_s[r]);
        }
        if (row.step > j.timing_warmup_steps) rank_max_step_s.push_back(mx);
        writer->append_step(row);
      }
    }
    pending.rows.clear();
    pending.mine.clear();
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
    bool done = st.global_step >= total_steps;
    while (!done && st.epoch < total_epochs) {
      const auto epoch_start = Clock::now();
      const double epoch_s_before = st.epoch_s;
      for (; st.step_in_epoch < spe && st.global_step < total_steps; ++st.step_in_epoch) {
        if (lead && st.global_step >= profile_from && st.global_step < profile_to) profiler.start();
        timer.start();
        Batch b = data.train->get(sampler.indices(st.epoch, st.step_in_epoch));
        auto x = b.x.to(dev, /*non_blocking=*/true), y = b.y.to(dev, true);
        timer.mark(kData);

#ifdef GRIDRUN_HAVE_NCCL
        if (autocast) set_cuda_autocast(true, j.precision == "bf16" ? at::kBFloat16 : at::kHalf);
#endif
        auto out = model->forward(x);
        auto loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), y);
#ifdef GRIDRUN_HAVE_NCCL
        if (autocast) set_cuda_autocast(false, at::kFloat);
#endif
        timer.mark(kForward);

        sync.begin_step();
        (fp16 ? loss * st.loss_scale : loss).backward();
        timer.mark(kBackward);
        GradSyncStats cs = sync.finish();
        timer.mark(kExposed);

        // fp16: unscale, and skip the step (halving the scale) on overflow; gradients are already
        // averaged, so every rank takes the same decision.
        bool step_ok = true;
        if (fp16) {
          torch::NoGradGuard ng;
          bool finite = true;
          for (auto& p : params) {
            if (!p.grad().defined()) continue;
            p.mutable_grad().div_(st.loss_scale);
            finite = finite && p.grad().isfinite().all().item<bool>();
          }
          step_ok = finite;
          st.loss_scale = finite ? st.loss_scale : st.loss_scale / 2;
        }
        const double lr = schedule.lr_at(st.global_step);
        for (auto& g : opt->param_groups()) g.options().set_lr(lr);
        if (step_ok) opt->step();
        if (!sync.zero_grad()) opt->zero_grad();
        timer.mark(kOptimizer);

        ++st.global_step;
        // Test hooks: deterministic interruption, failure and hang (docs/runner.md).
        if (o.stop_after_step > 0 && st.global_step == o.stop_after_step && lead) std::raise(SIGTERM);
        if (o.fail_at_step > 0 && st.global_step == o.fail_at_step && rank == o.fail_rank)
          throw std::runtime_error("injected failure (--fail-at-step " +
                                   std::to_string(o.fail_at_step) + ")");
        if (o.hang_at_step > 0 && st.global_step == o.hang_at_step && rank == o.fail_rank)
          for (;;) std::this_thread::sleep_for(std::chrono::hours(1));

        const double n = static_cast<double>(y.size(0));
        const double loss_v = loss.item<double>();
        const double correct = out.argmax(1).eq(y).sum().item<double>();
        const bool ckpt_due = lead && j.checkpoint_minutes > 0 &&
                              seconds_since(last_ckpt) >= j.checkpoint_minutes * 60.0;
        auto red = comm.allreduce_sum(std::vector<double>{loss_v * n, correct, n,
                                                          StopSignal::received() ? 1.0 : 0.0,
                                                          ckpt_due ? 1.0 : 0.0});
        timer.mark(kStep);
        if (st.global_step >= profile_to) profiler.stop();
        auto t = timer.resolve();
        st.epoch_loss_sum += red[0];
        st.epoch_correct += red[1];
        st.epoch_count += red[2];
        if (st.global_step > j.timing_warmup_steps) {
          timing_samples += red[2];
          timing_time += t[kStep];
        }
        pending.mine.push_back(t);
        if (lead) {
          results::StepRow row;
          row.step = st.global_step;
          row.epoch = st.epoch + 1;
          row.wall_s = wall();
          row.loss = red[0] / red[2];
          row.step_s = t[kStep];
          row.samples_per_s = red[2] / t[kStep];
          row.data_s = t[kData];
          row.forward_s = t[kForward];
          row.backward_s = t[kBackward];
          row.optimizer_s = t[kOptimizer];
          row.comm_s = cs.comm_s;
          row.exposed_comm_s = t[kExposed];
          pending.rows.push_back(row);
          if (!o.quiet && (st.global_step % o.log_every == 0 || st.global_step == total_steps))
            std::printf("step %lld/%lld epoch %lld/%lld loss %.4f acc %.3f %.0f samples/s "
                        "step %.1f ms comm %.1f ms\n",
                        static_cast<long long>(st.global_step), static_cast<long long>(total_steps),
                        static_cast<long long>(st.epoch + 1), static_cast<long long>(total_epochs),
                        row.loss, red[1] / red[2], row.samples_per_s, 1e3 * row.step_s,
                        1e3 * row.exposed_comm_s),
                std::fflush(stdout);
        }
        if (static_cast<std::int64_t>(pending.mine.size()) >= o.log_every) drain_rows();
        if (lead && seconds_since(last_flush) >= 30.0) flush();

        if (red[3] > 0) {  // some rank got SIGTERM/SIGUSR1: all stop here, checkpoint, exit 75
          ++st.step_in_epoch;
          st.epoch_s = epoch_s_before + seconds_since(epoch_start);
          st.wall_s = wall();  // only saved below; the process exits after this checkpoint
          if (st.step_in_epoch >= spe) {
            st.step_in_epoch = 0;
            ++st.epoch;
          }
          ckpt.save(*model, *opt, st);
          const std::string msg = "interrupted by signal; checkpoint at step " +
                                  std::to_string(st.global_step) + " in " + ckpt.latest() +
                                  " (rerun with --resume)";
          if (lead && !o.quiet) std::printf("gridrun-train: %s\n", msg.c_str());
          finish(results::Status::Interrupted, msg);
          return kExitInterrupted;
        }
        if (red[4] > 0) {
          TrainState mid = st;
          ++mid.step_in_epoch;
          mid.epoch_s = epoch_s_before + seconds_since(epoch_start);
          mid.wall_s = wall();
          if (mid.step_in_epoch >= spe) {
            mid.step_in_epoch = 0;
            ++mid.epoch;
          }
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
      if (eval_now) ev = evaluate(*model, *data.test, comm, dev, std::max<std::int64_t>(j.batch_per_rank, 256));
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
