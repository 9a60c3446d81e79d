// The training loop (see trainer.hpp and docs/runner.md). Everything around it (device, seeds,
// data, model, initial weights, results file, utilisation sampler, the failure path) is the
// JobHarness's (job_harness.hpp); this file holds only what a training job does with them.
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
#include "gridrun/runner/loader.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <torch/version.h>
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <limits>
#include <thread>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/progress.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/checkpoint.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/epoch_sampler.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/foreach_sgd.hpp"
#include "gridrun/runner/grad_sync.hpp"
#include "gridrun/runner/model.hpp"
#include "gridrun/runner/schedule.hpp"
#include "gridrun/runner/signals.hpp"
#include "job_harness.hpp"
#include "op_profiler.hpp"

namespace gridrun::runner {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The timed parts of one step, in the order they happen (not to be confused with a compare-by
// phase of a run, report/phases.hpp).
enum StepPart { kData, kForward, kBackward, kExposed, kOptimizer, kStep, kStepParts };

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
    if (cuda_) cur_->ev[kStepParts].record();
#endif
  }
  void mark(StepPart p) {
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
  // Part durations of a slot; kStep is the whole step (the others plus the flags exchange).
  std::array<double, kStepParts> resolve(std::size_t slot) {
    Slot& s = slots_.at(slot);
#ifdef GRIDRUN_HAVE_NCCL
    if (cuda_) {
      s.ev[kStep].synchronize();
      at::cuda::CUDAEvent* prev = &s.ev[kStepParts];
      for (int p = 0; p <= kOptimizer; ++p) {
        s.t[p] = prev->elapsed_time(s.ev[p]) / 1000.0;
        prev = &s.ev[p];
      }
      s.t[kStep] = s.ev[kStepParts].elapsed_time(s.ev[kStep]) / 1000.0;
    }
#endif
    return s.t;
  }

 private:
  struct Slot {
    std::array<double, kStepParts> t{};
#ifdef GRIDRUN_HAVE_NCCL
    std::array<at::cuda::CUDAEvent, kStepParts + 1> ev{
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
                                                        std::vector<torch::Tensor> params, double lr) {
  if (j.optimizer == "sgd") {
    if (j.nesterov && j.momentum <= 0) throw BadInput("gridrun-train: nesterov=true needs momentum > 0");
    return std::make_unique<torch::optim::SGD>(
        std::move(params),
        torch::optim::SGDOptions(lr).momentum(j.momentum).nesterov(j.nesterov).weight_decay(j.weight_decay));
  }
  if (j.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(std::move(params),
                                                torch::optim::AdamOptions(lr).weight_decay(j.weight_decay));
  if (j.optimizer == "adamw")
    return std::make_unique<torch::optim::AdamW>(std::move(params),
                                                 torch::optim::AdamWOptions(lr).weight_decay(j.weight_decay));
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
  GraphStep(Model& model, ForeachSgd& sgd, torch::optim::Optimizer& opt, bool autocast, at::ScalarType dtype)
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

// Rank 0 rewrites this file (run/progress.hpp) at most once a second from the training loop
// (never from a side thread, so a hung loop stops it): `gridrun run` ends a job whose heartbeat
// went stale, and `gridrun status` reads the live step, epoch and wall time from it.
class Heartbeat {
 public:
  explicit Heartbeat(std::string path) : path_(std::move(path)) {}
  void beat(const run::Progress& p, bool force = false) {
    if (path_.empty()) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    try {
      run::Progress q = p;
      q.unix_s = base::unix_now();
      base::replace_file(path_, run::progress_line(q));
    } catch (const std::exception&) {
      // A full disk must not stop training; the watchdog then sees a stale heartbeat, as it should
      // when nothing can be written.
    }
  }

 private:
  std::string path_;
  Clock::time_point last_{};
};

struct EvalResult {
  double loss = kNaN, acc = kNaN;
};

EvalResult evaluate(Model& model, const Dataset& test, Communicator& comm, torch::Device dev,
                    std::int64_t batch) {
  torch::NoGradGuard ng;
  // Every rank evaluates its shard of the test set with rank 0's buffers (BatchNorm running
  // statistics), as DDP's broadcast_buffers does: ranks that saw different half-batches would
  // otherwise score one model with several sets of statistics, and a resumed run (whose ranks all
  // load rank 0's checkpoint) would score differently from an undisturbed one.
  if (comm.size() > 1)
    for (auto& b : model.buffers())
      if (b.defined() && b.numel() > 0) comm.broadcast(b, 0);
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
    const auto first = static_cast<std::ptrdiff_t>(i);
    const auto last = static_cast<std::ptrdiff_t>(std::min(idx.size(), i + static_cast<std::size_t>(batch)));
    std::vector<std::int64_t> part(idx.begin() + first, idx.begin() + last);
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
  std::vector<results::StepRow> rows;  // rank 0: step, epoch, wall_s, comm_s
  std::vector<at::Tensor> loss;        // this rank's mean loss of the step (device scalar)
  std::vector<at::Tensor> correct;     // this rank's correct predictions (device scalar)
  std::vector<double> n;               // this rank's samples
  std::size_t size() const { return n.size(); }
  void clear() {
    rows.clear();
    loss.clear();
    correct.clear();
    n.clear();
  }
};

// Samples per second as a user's stopwatch sees it: host wall clock between synchronised points
// (the interval ends), launch gaps between steps included, from the first interval after the
// timing warm-up on.
struct WallThroughput {
  bool started = false;
  Clock::time_point t0, t1;
  double samples = 0;
  void add(double interval_samples) {
    const auto now = Clock::now();
    if (!started) {
      started = true;
      t0 = now;
    } else {
      samples += interval_samples;
      t1 = now;
    }
  }
  double per_s() const {
    return samples > 0 ? samples / std::chrono::duration<double>(t1 - t0).count() : kNaN;
  }
};

// --dump-params: all parameters as raw float32 in registration order (tests compare them).
void dump_params(const std::string& path, Model& model) {
  std::string bytes;
  for (const auto& p : model.parameters()) {
    auto c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  base::write_file_atomic(path, bytes);
}

// cuda_graph=true needs what GraphStep can capture; checked before anything is built.
void check_cuda_graph(const jobs::JobParams& j, int world) {
  if (!j.cuda_graph) return;
  if (j.device != "gpu" || world != 1)
    throw BadInput(
        "gridrun-train: cuda_graph=true needs device=gpu and ranks=1 (the gradient "
        "allreduce is not captured)");
  if (j.optimizer != "sgd" || j.precision == "fp16")
    throw BadInput(
        "gridrun-train: cuda_graph=true needs optimizer=sgd and precision fp32 or "
        "bf16 (fp16 loss scaling reads the host every step)");
}

// SGD runs as foreach kernels (foreach_sgd.hpp); other optimizers step as LibTorch's.
std::unique_ptr<ForeachSgd> make_fast_sgd(torch::optim::Optimizer& opt,
                                          const std::vector<at::Tensor>& params) {
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(&opt)) return std::make_unique<ForeachSgd>(*sgd, params);
  return nullptr;
}

std::int64_t total_steps_of(const jobs::JobParams& j, std::int64_t steps_per_epoch) {
  std::int64_t total = j.epochs > 0 ? j.epochs * steps_per_epoch : j.max_steps;
  if (j.max_steps > 0) total = std::min(total, j.max_steps);
  return total;
}

double base_lr_of(const jobs::JobParams& j) {
  return j.scale_lr ? j.lr * static_cast<double>(j.global_batch) / 256.0 : j.lr;
}

// One training job's loop over the harness's model and data: steps, interval rows, epoch ends
// (evaluation, epoch row, checkpoint), timed checkpoints, signals, stop conditions, the summary.
class TrainLoop : private LoopBase {
 public:
  explicit TrainLoop(JobHarness& h);
  // Returns kExitCompleted (also for target reached), kExitInterrupted or kExitDiverged.
  int run();

 private:
  struct StepOut {
    at::Tensor loss, correct;  // device scalars of this rank
    GradSyncStats sync;
  };
  // The running epoch's start; its time so far counts into TrainState::epoch_s.
  struct EpochClock {
    Clock::time_point start;
    double before;
  };

  std::unique_ptr<Loader> make_loader() const;
  void open_results();
  std::vector<double> step();  // [stop, checkpoint due], summed over ranks
  StepOut eager_step(const at::Tensor& x, const at::Tensor& y, double lr);
  bool unscale_fp16();
  void test_hooks() const;
  void queue_row(const StepOut& out, std::int64_t samples);
  void drain_rows();
  std::vector<double> interval_metrics();
  void write_rows(const std::vector<double>& red, const std::vector<std::array<double, kStepParts>>& times,
                  const std::vector<double>& all);
  void flush();
  int interrupt(const EpochClock& ec);
  void checkpoint_mid_epoch(const EpochClock& ec);
  bool end_epoch(const EpochClock& ec);
  void write_epoch_row(const EvalResult& ev);
  void finish(results::Status status, const std::string& reason);
  double wall() const { return wall_before_ + seconds_since(run_start_); }
  // What the progress file says now (run/progress.hpp).
  run::Progress progress() const {
    run::Progress p;
    p.step = st_.global_step;
    p.total_steps = total_steps_;
    p.epoch = std::min(st_.epoch + 1, total_epochs_);
    p.epochs = total_epochs_;
    p.wall_s = wall();
    return p;
  }

  EpochSampler sampler_;
  const std::int64_t spe_, total_steps_, total_epochs_;
  LrSchedule schedule_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> opt_;
  std::unique_ptr<ForeachSgd> fast_sgd_;
  GradSync sync_;
  Checkpointer ckpt_;
  TrainState st_;
  bool resumed_ = false;
  // Training batches: built (and augmented) ahead on a loader thread, off the training thread.
  std::unique_ptr<Loader> loader_;
  const bool fp16_, autocast_;
  StepTimer timer_;
  PendingRows pending_;
  Heartbeat heartbeat_;
  // profile_steps: rank 0 records the operators of the steps right after the timing warm-up.
  OpProfiler profiler_;
  const std::int64_t profile_from_, profile_to_;
  Clock::time_point run_start_, last_flush_, last_ckpt_;
  double wall_before_ = 0;  // training wall time of earlier processes of this job (checkpoint)
  // Where this process's time went (/summary time_*_s): the first step's start (unix) and the
  // seconds spent evaluating and checkpointing since.
  double first_step_unix_ = 0, eval_s_ = 0, ckpt_s_ = 0;
  void save_checkpoint(const TrainState& st);
  std::vector<double> rank_max_step_s_;
  double timing_samples_ = 0, timing_time_ = 0;
  WallThroughput wall_tp_;
  results::Status status_ = results::Status::Completed;
  std::string reason_ = "completed";
  // Divergence (run/exit_codes.hpp): decided on the all-reduced loss, so every rank stops at the
  // same step. `high_steps_` counts consecutive steps above kDivergedLoss.
  void check_divergence(const std::vector<double>& red, std::int64_t first_step);
  std::int64_t high_steps_ = 0;
  std::string diverged_;  // the reason, "" while the loss is sane
#ifdef GRIDRUN_HAVE_NCCL
  std::unique_ptr<GraphStep> graph_;
#endif
};

TrainLoop::TrainLoop(JobHarness& h)
    : LoopBase(h),
      sampler_(h.train_size(), j_.batch_per_rank, rank_, world_, static_cast<std::uint64_t>(j_.seed)),
      spe_(sampler_.steps_per_epoch()),
      total_steps_(total_steps_of(j_, spe_)),
      total_epochs_(j_.epochs > 0 ? j_.epochs : (total_steps_ + spe_ - 1) / spe_),
      schedule_(ScheduleOptions{j_.lr_schedule, base_lr_of(j_), j_.warmup_steps, total_steps_}),
      params_(model_.parameters()),
      opt_(make_optimizer(j_, params_, base_lr_of(j_))),
      fast_sgd_(make_fast_sgd(*opt_, params_)),
      sync_(params_, comm_, GradSyncOptions{j_.bucket_mb, j_.overlap}),
      ckpt_(o_.checkpoint_dir, comm_),
      fp16_(h.gpu() && j_.precision == "fp16"),
      autocast_(h.gpu() && j_.precision != "fp32"),
      timer_(h.gpu()),
      heartbeat_(lead_ ? o_.heartbeat_file : std::string()),
      profiler_(h.gpu()),
      profile_from_(j_.timing_warmup_steps),
      profile_to_(j_.timing_warmup_steps + j_.profile_steps) {
  st_.world = world_;
  if (o_.resume) resumed_ = ckpt_.load(model_, *opt_, st_);
  loader_ = make_loader();
#ifdef GRIDRUN_HAVE_NCCL
  if (j_.cuda_graph)
    graph_ = std::make_unique<GraphStep>(model_, *fast_sgd_, *opt_, autocast_,
                                         j_.precision == "bf16" ? at::kBFloat16 : at::kHalf);
#endif
  open_results();
  run_start_ = last_flush_ = last_ckpt_ = Clock::now();
  first_step_unix_ = base::unix_now();
  wall_before_ = st_.wall_s;
  if (!resumed_) st_.best_test_acc = -1;
  heartbeat_.beat(progress(), true);
}

std::unique_ptr<Loader> TrainLoop::make_loader() const {
  LoaderOptions lo;
  lo.augment = AugmentOptions{parse_augment(j_.augment), static_cast<std::uint64_t>(j_.seed), 4};
  lo.steps_per_epoch = spe_;
  lo.start_epoch = st_.epoch;  // a resumed run starts where its checkpoint left off
  lo.start_step = st_.step_in_epoch;
  // Device-resident data is indexed by an asynchronous launch: a thread would only add a hop.
  lo.queue_depth = h_.gpu() ? 0 : 2;
  // The sampler is copied: EpochSampler caches its epoch's permutation and is not thread-safe.
  return std::make_unique<Loader>(
      h_.train_set_ptr(), [s = sampler_](std::int64_t e, std::int64_t k) mutable { return s.indices(e, k); },
      lo);
}

void TrainLoop::open_results() {
  ResultsStart rs;
  // The writer keeps rows of steps before resume_from_step (1-based steps: the first step this
  // process will run); rows a killed run wrote after its last checkpoint are dropped and redone.
  rs.resume_from_step = resumed_ ? st_.global_step + 1 : 0;
  rs.int_attrs["grad_buckets"] = static_cast<std::int64_t>(sync_.num_buckets());
  rs.int_attrs["steps_per_epoch"] = spe_;  // what `gridrun calibrate` scales a job's steps by
  h_.open_results(rs);
  if (lead_ && !o_.quiet)
    std::printf(
        "gridrun-train %s: %s on %s, %d rank(s), %zu bucket(s), %lld steps/epoch, "
        "%lld steps%s\n",
        o_.id.c_str(), j_.model.c_str(), j_.dataset.c_str(), world_, sync_.num_buckets(),
        static_cast<long long>(spe_), static_cast<long long>(total_steps_),
        resumed_ ? (", resumed at step " + std::to_string(st_.global_step)).c_str() : "");
}

int TrainLoop::run() {
  // A checkpoint taken inside an epoch (signal, timed) leaves that epoch's end pending, even at
  // the last step: done only once the last epoch end has run (it resets step_in_epoch to 0).
  bool done = st_.global_step >= total_steps_ && st_.step_in_epoch == 0;
  while (!done && st_.epoch < total_epochs_ && diverged_.empty()) {
    const EpochClock ec{Clock::now(), st_.epoch_s};
    for (; st_.step_in_epoch < spe_ && st_.global_step < total_steps_ && diverged_.empty();
         ++st_.step_in_epoch) {
      const auto flags = step();
      if (flags[0] > 0) return interrupt(ec);  // some rank got SIGTERM/SIGUSR1
      if (flags[1] > 0) checkpoint_mid_epoch(ec);
    }
    if (!diverged_.empty()) break;  // no evaluation or checkpoint of a diverged model
    done = end_epoch(ec);
  }
  drain_rows();  // the last rows may still show a divergence
  heartbeat_.beat(progress(), true);
  if (!diverged_.empty()) {
    if (lead_ && !o_.quiet) std::printf("gridrun-train: %s\n", diverged_.c_str()), std::fflush(stdout);
    finish(results::Status::Diverged, diverged_);
    return kExitDiverged;
  }
  if (!o_.dump_params.empty() && lead_) dump_params(o_.dump_params, model_);
  finish(status_, reason_);
  return kExitCompleted;
}

// Called with every interval's all-reduced metrics (identical on every rank).
void TrainLoop::check_divergence(const std::vector<double>& red, std::int64_t first_step) {
  for (std::size_t i = 0; 3 * i + 2 < red.size() && diverged_.empty(); ++i) {
    const double loss = red[3 * i] / red[3 * i + 2];
    const std::int64_t step = first_step + static_cast<std::int64_t>(i);
    char lr[32];
    std::snprintf(lr, sizeof lr, "%g", j_.lr);
    if (!std::isfinite(loss)) {
      diverged_ = "diverged: training loss " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                  " at step " + std::to_string(step) + ", lr " + lr;
    } else if (loss > kDivergedLoss) {
      if (++high_steps_ >= kDivergedSteps)
        diverged_ = "diverged: training loss above " + base::format_fixed(kDivergedLoss, 0) + " for " +
                    std::to_string(kDivergedSteps) + " steps in a row (" + base::format_fixed(loss, 1) +
                    " at step " + std::to_string(step) + "), lr " + lr;
    } else {
      high_steps_ = 0;
    }
  }
}

std::vector<double> TrainLoop::step() {
  if (lead_ && st_.global_step >= profile_from_ && st_.global_step < profile_to_) profiler_.start();
  timer_.start(pending_.size());
  Batch b = loader_->get(st_.epoch, st_.step_in_epoch);
  auto x = b.x.to(dev_, /*non_blocking=*/true), y = b.y.to(dev_, true);
  if (h_.channels_last()) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  timer_.mark(kData);

  const double lr = schedule_.lr_at(st_.global_step);
  StepOut out;
#ifdef GRIDRUN_HAVE_NCCL
  if (graph_ && (graph_->ready() || st_.global_step >= kGraphWarmupSteps)) {
    // The first time: capture records the work without running it; the replay runs it.
    if (!graph_->ready()) graph_->capture(x, y, lr);
    graph_->replay(x, y, lr);
    out.loss = graph_->loss().clone();
    out.correct = graph_->correct().clone();
    for (StepPart p : {kForward, kBackward, kExposed, kOptimizer}) timer_.mark(p);
  } else
#endif
  {
    out = eager_step(x, y, lr);
  }

  ++st_.global_step;
  test_hooks();
  const bool ckpt_due =
      lead_ && j_.checkpoint_minutes > 0 && seconds_since(last_ckpt_) >= j_.checkpoint_minutes * 60.0;
  auto flags =
      comm_.allreduce_sum(std::vector<double>{StopSignal::received() ? 1.0 : 0.0, ckpt_due ? 1.0 : 0.0});
  timer_.mark(kStep);
  if (st_.global_step >= profile_to_) profiler_.stop();
  queue_row(out, y.size(0));
  if (static_cast<std::int64_t>(pending_.size()) >= o_.log_every) drain_rows();
  if (lead_ && seconds_since(last_flush_) >= 30.0) flush();
  // Liveness for the scheduler's watchdog (gridrun run): at most one write a second.
  heartbeat_.beat(progress());
  return flags;
}

TrainLoop::StepOut TrainLoop::eager_step(const at::Tensor& x, const at::Tensor& y, double lr) {
  StepOut r;
#ifdef GRIDRUN_HAVE_NCCL
  if (autocast_) set_cuda_autocast(true, j_.precision == "bf16" ? at::kBFloat16 : at::kHalf);
#endif
  auto out = model_.forward(x);
  auto loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), y);
#ifdef GRIDRUN_HAVE_NCCL
  if (autocast_) set_cuda_autocast(false, at::kFloat);
#endif
  timer_.mark(kForward);

  sync_.begin_step();
  (fp16_ ? loss * st_.loss_scale : loss).backward();
  timer_.mark(kBackward);
  r.sync = sync_.finish();
  timer_.mark(kExposed);

  const bool step_ok = !fp16_ || unscale_fp16();
  for (auto& g : opt_->param_groups()) g.options().set_lr(lr);
  if (step_ok) {
    if (fast_sgd_)
      fast_sgd_->step(lr);
    else
      opt_->step();
  }
  if (!sync_.zero_grad()) opt_->zero_grad();
  timer_.mark(kOptimizer);
  torch::NoGradGuard ng;
  r.correct = out.detach().argmax(1).eq(y).sum();
  r.loss = loss.detach();
  return r;
}

// fp16: unscale, and skip the step (halving the scale) on overflow; gradients are already
// averaged, so every rank takes the same decision. One device read per step.
bool TrainLoop::unscale_fp16() {
  torch::NoGradGuard ng;
  std::vector<at::Tensor> grads;
  for (auto& p : params_)
    if (p.grad().defined()) grads.push_back(p.grad());
  auto found_inf = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev_));
  auto inv = at::full({1}, 1.0 / st_.loss_scale, at::TensorOptions().dtype(at::kFloat).device(dev_));
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv);
  const bool ok = found_inf.item<float>() == 0.0f;
  st_.loss_scale = ok ? st_.loss_scale : st_.loss_scale / 2;
  return ok;
}

// Test hooks: deterministic interruption, failure and hang (docs/runner.md).
void TrainLoop::test_hooks() const {
  const std::int64_t s = st_.global_step;
  if (o_.stop_after_step > 0 && s == o_.stop_after_step && lead_) std::raise(SIGTERM);
  if (o_.fail_at_step > 0 && s == o_.fail_at_step && rank_ == o_.fail_rank)
    throw std::runtime_error("injected failure (--fail-at-step " + std::to_string(o_.fail_at_step) + ")");
  if (o_.hang_at_step > 0 && s == o_.hang_at_step && rank_ == o_.fail_rank)
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void TrainLoop::queue_row(const StepOut& out, std::int64_t samples) {
  pending_.loss.push_back(out.loss);
  pending_.correct.push_back(out.correct);
  pending_.n.push_back(static_cast<double>(samples));
  if (!lead_) return;
  results::StepRow row;
  row.step = st_.global_step;
  row.epoch = st_.epoch + 1;
  row.wall_s = wall();
  row.comm_s = out.sync.comm_s;
  pending_.rows.push_back(row);
}

// Writes the pending steps (collective): one device read of the interval's loss and correct
// counts, one host allreduce of them, one gather of the per-rank phase times to rank 0.
void TrainLoop::drain_rows() {
  const std::size_t k = pending_.size();
  if (k == 0) return;
  const auto red = interval_metrics();  // per step: loss * n, correct, n (all ranks)
  if (st_.global_step - static_cast<std::int64_t>(k) >= j_.timing_warmup_steps) {
    double samples = 0;
    for (std::size_t i = 0; i < k; ++i) samples += red[3 * i + 2];
    wall_tp_.add(samples);
  }
  std::vector<double> mine;
  mine.reserve(k * kStepParts);
  std::vector<std::array<double, kStepParts>> times(k);
  for (std::size_t i = 0; i < k; ++i) {
    times[i] = timer_.resolve(i);
    mine.insert(mine.end(), times[i].begin(), times[i].end());
  }
  check_divergence(red, st_.global_step - static_cast<std::int64_t>(k) + 1);
  const auto all = comm_.gather(mine, 0);
  for (std::size_t i = 0; i < k; ++i) {
    st_.epoch_loss_sum += red[3 * i];
    st_.epoch_correct += red[3 * i + 1];
    st_.epoch_count += red[3 * i + 2];
    const std::int64_t step = st_.global_step - static_cast<std::int64_t>(k - 1 - i);
    if (step > j_.timing_warmup_steps) {
      timing_samples_ += red[3 * i + 2];
      timing_time_ += times[i][kStep];
    }
  }
  if (lead_) write_rows(red, times, all);
  pending_.clear();
}

std::vector<double> TrainLoop::interval_metrics() {
  const std::size_t k = pending_.size();
  std::vector<double> metric(3 * k);  // per step: loss * n, correct, n (this rank)
  // One device-to-host copy (one wait for the device) for the whole interval: k losses, then k
  // correct counts.
  auto host = at::cat({at::stack(at::TensorList(pending_.loss)).to(at::kDouble),
                       at::stack(at::TensorList(pending_.correct)).to(at::kDouble)})
                  .to(at::kCPU)
                  .contiguous();
  const double* lp = host.data_ptr<double>();
  const double* cp = lp + k;
  for (std::size_t i = 0; i < k; ++i) {
    metric[3 * i] = lp[i] * pending_.n[i];
    metric[3 * i + 1] = cp[i];
    metric[3 * i + 2] = pending_.n[i];
  }
  return world_ > 1 ? comm_.allreduce_sum(metric) : metric;
}

// Rank 0: the interval's /steps rows and progress lines; `all` holds every rank's phase times.
void TrainLoop::write_rows(const std::vector<double>& red,
                           const std::vector<std::array<double, kStepParts>>& times,
                           const std::vector<double>& all) {
  const std::size_t k = pending_.size();
  for (std::size_t i = 0; i < k; ++i) {
    auto& row = pending_.rows[i];
    const auto& t = times[i];
    row.loss = red[3 * i] / red[3 * i + 2];
    row.step_s = t[kStep];
    row.samples_per_s = red[3 * i + 2] / t[kStep];
    row.data_s = t[kData];
    row.forward_s = t[kForward];
    row.backward_s = t[kBackward];
    row.optimizer_s = t[kOptimizer];
    row.exposed_comm_s = t[kExposed];
    row.rank_step_s.resize(world_);
    double mx = 0;
    for (int r = 0; r < world_; ++r) {
      row.rank_step_s[r] = all[(r * k + i) * kStepParts + kStep];
      mx = std::max(mx, row.rank_step_s[r]);
    }
    if (row.step > j_.timing_warmup_steps) rank_max_step_s_.push_back(mx);
    h_.writer()->append_step(row);
    if (!o_.quiet && (row.step % o_.log_every == 0 || row.step == total_steps_))
      std::printf(
          "step %lld/%lld epoch %lld/%lld loss %.4f acc %.3f %.0f samples/s "
          "step %.1f ms comm %.1f ms\n",
          static_cast<long long>(row.step), static_cast<long long>(total_steps_),
          static_cast<long long>(row.epoch), static_cast<long long>(total_epochs_), row.loss,
          red[3 * i + 1] / red[3 * i + 2], row.samples_per_s, 1e3 * row.step_s, 1e3 * row.exposed_comm_s),
          std::fflush(stdout);
  }
}

void TrainLoop::flush() {
  if (lead_) h_.writer()->flush();
  last_flush_ = Clock::now();
}

// Some rank got SIGTERM/SIGUSR1: all ranks stop at this step boundary, checkpoint and exit 75.
int TrainLoop::interrupt(const EpochClock& ec) {
  drain_rows();
  heartbeat_.beat(progress(), true);  // where this attempt ended, for `gridrun status`
  ++st_.step_in_epoch;
  st_.epoch_s = ec.before + seconds_since(ec.start);
  st_.wall_s = wall();  // only saved below; the process exits after this checkpoint
  // The epoch is not advanced even after its last step: its end (evaluation, epoch row, epoch
  // sums reset) has not run yet, and the resumed process runs it first.
  save_checkpoint(st_);
  const std::string msg = "interrupted by signal; checkpoint at step " + std::to_string(st_.global_step) +
                          " in " + ckpt_.latest() + " (rerun with --resume)";
  if (lead_ && !o_.quiet) std::printf("gridrun-train: %s\n", msg.c_str());
  finish(results::Status::Interrupted, msg);
  return kExitInterrupted;
}

// checkpoint_minutes elapsed on rank 0: a checkpoint at this step, the epoch not advanced (see
// interrupt()).
void TrainLoop::checkpoint_mid_epoch(const EpochClock& ec) {
  drain_rows();
  TrainState mid = st_;
  ++mid.step_in_epoch;
  mid.epoch_s = ec.before + seconds_since(ec.start);
  mid.wall_s = wall();
  save_checkpoint(mid);
  last_ckpt_ = Clock::now();
}

// Epoch end (or max_steps reached inside the epoch: a partial last epoch is closed the same way,
// so every run ends with an epoch row and a final evaluation): evaluation, epoch row, flush,
// checkpoint. Returns true when the job is done.
bool TrainLoop::end_epoch(const EpochClock& ec) {
  const bool partial = st_.step_in_epoch < spe_;
  st_.epoch_s = ec.before + seconds_since(ec.start);
  profiler_.stop();  // a window crossing the epoch end resumes at the next step, without eval
  drain_rows();
  EvalResult ev;
  const bool eval_now = j_.eval_every > 0 &&
                        ((st_.epoch + 1) % j_.eval_every == 0 || st_.epoch + 1 == total_epochs_ || partial);
  if (eval_now) {
    const auto t0 = Clock::now();
    ev = evaluate(model_, h_.test_set(), comm_, dev_, std::max<std::int64_t>(j_.batch_per_rank, 256));
    eval_s_ += seconds_since(t0);
  }
  if (lead_) write_epoch_row(ev);
  flush();
  if (eval_now) st_.best_test_acc = std::max(st_.best_test_acc, ev.acc);
  const bool target = j_.target_accuracy > 0 && eval_now && ev.acc >= j_.target_accuracy;
  ++st_.epoch;
  st_.step_in_epoch = 0;
  st_.epoch_loss_sum = st_.epoch_correct = st_.epoch_count = st_.epoch_s = 0;
  {
    // Epoch-end checkpoint, also after the last epoch: a finished job's final weights are what
    // `task: inference` with `checkpoint: <job id>` loads.
    TrainState saved = st_;
    saved.wall_s = wall();
    save_checkpoint(saved);
    last_ckpt_ = Clock::now();
  }
  if (target) {
    status_ = results::Status::TargetReached;
    reason_ = "target_accuracy " + std::to_string(j_.target_accuracy) + " reached at epoch " +
              std::to_string(st_.epoch) + " (test acc " + std::to_string(ev.acc) + ")";
    return true;
  }
  return st_.global_step >= total_steps_ || partial;
}

void TrainLoop::save_checkpoint(const TrainState& st) {
  const auto t0 = Clock::now();
  ckpt_.save(model_, *opt_, st);
  ckpt_s_ += seconds_since(t0);
}

void TrainLoop::write_epoch_row(const EvalResult& ev) {
  results::EpochRow er;
  er.epoch = st_.epoch + 1;
  er.train_loss = st_.epoch_count > 0 ? st_.epoch_loss_sum / st_.epoch_count : kNaN;
  er.train_acc = st_.epoch_count > 0 ? st_.epoch_correct / st_.epoch_count : kNaN;
  er.test_loss = ev.loss;
  er.test_acc = ev.acc;
  er.epoch_s = st_.epoch_s;
  er.wall_s = wall();
  h_.writer()->append_epoch(er);
  if (!o_.quiet)
    std::printf("epoch %lld/%lld train loss %.4f acc %.3f test loss %.4f acc %.3f (%.1f s)\n",
                static_cast<long long>(er.epoch), static_cast<long long>(total_epochs_), er.train_loss,
                er.train_acc, er.test_loss, er.test_acc, er.epoch_s),
        std::fflush(stdout);
}

// Collective: the last rows, then the training figures of /summary (the harness adds the
// figures every job has and ends the file).
void TrainLoop::finish(results::Status status, const std::string& reason) {
  drain_rows();
  profiler_.stop();
  results::Summary s;
  if (lead_) {
    const double fps = model_.flops_per_sample();
    s["train_flops_per_sample"] = 3.0 * fps;
    s["bytes_per_sample"] = model_.bytes_per_sample(j_.batch_per_rank, j_.precision == "fp32" ? 4.0 : 2.0);
    const double sps = timing_time_ > 0 ? timing_samples_ / timing_time_ : kNaN;
    s["flops_per_s"] = 3.0 * fps * sps;
    if (wall_tp_.samples > 0) s["samples_per_s_wall"] = wall_tp_.per_s();
    if (!rank_max_step_s_.empty()) {
      double sum = 0;
      for (double v : rank_max_step_s_) sum += v;
      s["rank_max_step_s_mean"] = sum / static_cast<double>(rank_max_step_s_.size());
    }
    // Where this process's time went, from its launcher's start to now (docs/results.md,
    // "Where the time went"); NaN where a clock is unknown (no --launched-at).
    const double now = base::unix_now(), proc = base::process_start_unix();
    const double launched = o_.launched_at > 0 ? o_.launched_at : kNaN;
    s["launched_unix"] = launched;
    s["process_start_unix"] = proc;
    s["first_step_unix"] = first_step_unix_;
    s["finished_unix"] = now;
    s["time_launch_s"] = proc - launched;
    s["time_load_s"] = o_.main_unix > 0 ? o_.main_unix - proc : kNaN;
    s["time_setup_s"] = o_.main_unix > 0 ? first_step_unix_ - o_.main_unix : kNaN;
    s["time_eval_s"] = eval_s_;
    s["time_checkpoint_s"] = ckpt_s_;
    s["time_train_s"] = std::max(0.0, now - first_step_unix_ - eval_s_ - ckpt_s_);
    if (!profiler_.empty()) {
      h_.writer()->set_profile(profiler_.ops());
      profiler_.write_chrome_trace((fs::path(o_.out_dir) / run::RunDir::profile_trace_name(o_.id)).string(),
                                   rank_);
    }
  }
  h_.finish(status, reason, std::move(s));
}

}  // namespace

int train(const RunnerOptions& o, Communicator& comm) {
  check_cuda_graph(o.job, comm.size());
  JobHarness h(o, comm, HarnessOptions{});
  return h.run([&h] {
    TrainLoop loop(h);
    return loop.run();
  });
}

}  // namespace gridrun::runner
