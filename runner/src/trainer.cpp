// The training loop (see trainer.hpp and docs/runner.md). Everything around it (device, seeds,
// data, model, initial weights, results file, utilisation sampler, the failure path) is the
// JobHarness's (job_harness.hpp); this file holds only what a training job does with them: the
// order of a step, epoch ends (evaluation, checkpoint), timed checkpoints, signals, stop conditions
// and the summary. The step's arithmetic is the StepExecutor's (step_executor.hpp), its rows and
// figures the StepRecorder's (step_recorder.hpp), its clocks in clocks.hpp: one file each, so this
// one reads as the loop.
//
// One step: data (index + normalise + copy to device) -> forward + loss -> backward (gradient hooks
// launch bucket allreduces as buckets fill) -> GradSync::finish (waits only for outstanding
// buckets: "exposed" communication) -> lr schedule + optimizer step (foreach SGD) -> one small
// host allreduce of [stop flag, checkpoint-due flag], which makes all ranks agree on stopping and
// checkpointing at the same step boundary. Nothing in it waits for the device (step_recorder.hpp
// says why). On the GPU the step also uses device-resident data, cuDNN autotuning, TF32 (job
// parameters) and optionally a CUDA graph.
#include "trainer.hpp"
#include "loader.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.hpp"
#include "clocks.hpp"
#include "epoch_sampler.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/progress.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"
#include "job_harness.hpp"
#include "lr_schedule.hpp"
#include "op_profiler.hpp"
#include "signals.hpp"
#include "step_executor.hpp"
#include "step_recorder.hpp"

namespace gridrun::runner {

namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

// --dump-params: all parameters as raw float32 in registration order (tests compare them).
void dump_params(const std::string& path, Model& model) {
  std::string bytes;
  for (const auto& p : model.parameters()) {
    auto c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  base::write_file_atomic(path, bytes);
}

// cuda_graph=true needs what GraphStep (step_executor.cpp) can capture; checked before anything is
// built.
void check_cuda_graph(const jobs::JobParams& j, int world) {
  if (!j.cuda_graph) return;
  if (j.device != jobs::Device::gpu || world != 1)
    throw BadInput(
        "gridrun-train: cuda_graph=true needs device=gpu and ranks=1 (the gradient "
        "allreduce is not captured)");
  if (j.optimizer != "sgd" || j.precision == jobs::Precision::fp16)
    throw BadInput(
        "gridrun-train: cuda_graph=true needs optimizer=sgd and precision fp32 or "
        "bf16 (fp16 loss scaling reads the host every step)");
}

std::int64_t total_steps_of(const jobs::JobParams& j, std::int64_t steps_per_epoch) {
  std::int64_t total = j.epochs > 0 ? j.epochs * steps_per_epoch : j.max_steps;
  if (j.max_steps > 0) total = std::min(total, j.max_steps);
  return total;
}

double base_lr_of(const jobs::JobParams& j) {
  return j.scale_lr ? j.lr * static_cast<double>(j.global_batch) / 256.0 : j.lr;
}

// One training job's loop over the harness's model and data: steps, epoch ends (evaluation, epoch
// row, checkpoint), timed checkpoints, signals, stop conditions, the summary.
class TrainLoop : private LoopBase {
 public:
  explicit TrainLoop(JobHarness& h);
  // Returns kExitCompleted (also for target reached), kExitInterrupted or kExitDiverged.
  int run();

 private:
  std::unique_ptr<Loader> make_loader() const;
  void open_results();
  std::vector<double> step();  // [stop, checkpoint due], summed over ranks
  void test_hooks() const;
  int interrupt(const EpochClock& ec);
  void checkpoint_mid_epoch(const EpochClock& ec);
  bool end_epoch(const EpochClock& ec);
  void save_checkpoint(const TrainState& st);
  void finish(results::Status status, const std::string& reason);
  double wall() const { return wall_.seconds(); }
  // What the progress file says now (run/progress.hpp).
  run::Progress progress() const {
    run::Progress p;
    p.step = st_.global_step;
    p.total_steps = total_steps_;
    // The epoch the last step done belongs to, as the /steps rows count it (from the step, not
    // st_.epoch: right after an epoch ends st_.epoch already names the next one, and a job that
    // reached its target after 3 of 4 epochs showed "4/4" in status, issue 58).
    p.epoch = st_.global_step > 0 && spe_ > 0 ? std::min((st_.global_step - 1) / spe_ + 1, total_epochs_) : 1;
    p.epochs = total_epochs_;
    p.wall_s = wall();
    return p;
  }

  EpochSampler sampler_;
  const std::int64_t spe_, total_steps_, total_epochs_;
  LrSchedule schedule_;
  // The optimizer, gradient sync and CUDA graph; declared before the loader, so it outlives it.
  StepExecutor exec_;
  Checkpointer ckpt_;
  TrainState st_;
  bool resumed_ = false;
  // Training batches: built (and augmented) ahead on a loader thread, off the training thread.
  std::unique_ptr<Loader> loader_;
  // Training wall time of this job: earlier processes (checkpoint) plus this one.
  WallClock wall_;
  StepRecorder recorder_;
  Heartbeat heartbeat_;
  // profile_steps: rank 0 records the operators of the steps right after the timing warm-up.
  OpProfiler profiler_;
  const std::int64_t profile_from_, profile_to_;
  Clock::time_point last_ckpt_;
  // Where this process's time went (/summary time_*_s): the first step's start (unix) and the
  // seconds spent evaluating and checkpointing since.
  double first_step_unix_ = 0, eval_s_ = 0, ckpt_s_ = 0;
  results::Status status_ = results::Status::Completed;
  std::string reason_ = "completed";
};

TrainLoop::TrainLoop(JobHarness& h)
    : LoopBase(h),
      sampler_(h.train_size(), j_.batch_per_rank, rank_, world_, static_cast<std::uint64_t>(j_.seed)),
      spe_(sampler_.steps_per_epoch()),
      total_steps_(total_steps_of(j_, spe_)),
      total_epochs_(j_.epochs > 0 ? j_.epochs : (total_steps_ + spe_ - 1) / spe_),
      schedule_(ScheduleOptions{j_.lr_schedule, base_lr_of(j_), j_.warmup_steps, total_steps_}),
      exec_(h, base_lr_of(j_)),
      ckpt_(o_.checkpoint_dir, comm_),
      recorder_(h, RecorderOptions{total_steps_, total_epochs_, &wall_}),
      heartbeat_(lead_ ? o_.heartbeat_file : std::string()),
      profiler_(h.gpu()),
      profile_from_(j_.timing_warmup_steps),
      profile_to_(j_.timing_warmup_steps + j_.profile_steps) {
  st_.world = world_;
  if (o_.resume) resumed_ = ckpt_.load(model_, exec_.optimizer(), st_);
  loader_ = make_loader();
  open_results();
  const auto now = Clock::now();
  recorder_.start_flush_clock(now);
  last_ckpt_ = now;
  first_step_unix_ = base::unix_now();
  wall_.start(now, st_.wall_s);
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
  rs.int_attrs["grad_buckets"] = static_cast<std::int64_t>(exec_.num_buckets());
  rs.int_attrs["steps_per_epoch"] = spe_;  // what `gridrun calibrate` scales a job's steps by
  h_.open_results(rs);
  if (lead_ && !o_.quiet)
    std::printf(
        "gridrun-train %s: %s on %s, %d rank(s), %zu bucket(s), %lld steps/epoch, "
        "%lld steps%s\n",
        o_.id.c_str(), j_.model.c_str(), j_.dataset.c_str(), world_, exec_.num_buckets(),
        static_cast<long long>(spe_), static_cast<long long>(total_steps_),
        resumed_ ? (", resumed at step " + std::to_string(st_.global_step)).c_str() : "");
}

int TrainLoop::run() {
  // A checkpoint taken inside an epoch (signal, timed) leaves that epoch's end pending, even at
  // the last step: done only once the last epoch end has run (it resets step_in_epoch to 0).
  bool done = st_.global_step >= total_steps_ && st_.step_in_epoch == 0;
  const std::string& diverged = recorder_.diverged();
  while (!done && st_.epoch < total_epochs_ && diverged.empty()) {
    const EpochClock ec{Clock::now(), st_.epoch_s};
    for (; st_.step_in_epoch < spe_ && st_.global_step < total_steps_ && diverged.empty();
         ++st_.step_in_epoch) {
      const auto flags = step();
      if (flags[0] > 0) return interrupt(ec);  // some rank got SIGTERM/SIGUSR1
      if (flags[1] > 0) checkpoint_mid_epoch(ec);
    }
    if (!diverged.empty()) break;  // no evaluation or checkpoint of a diverged model
    done = end_epoch(ec);
  }
  recorder_.drain(st_);  // the last rows may still show a divergence
  heartbeat_.beat(progress(), true);
  if (!diverged.empty()) {
    if (lead_ && !o_.quiet) std::printf("gridrun-train: %s\n", diverged.c_str()), std::fflush(stdout);
    finish(results::Status::Diverged, diverged);
    return kExitDiverged;
  }
  if (!o_.dump_params.empty() && lead_) dump_params(o_.dump_params, model_);
  finish(status_, reason_);
  return kExitCompleted;
}

std::vector<double> TrainLoop::step() {
  if (lead_ && st_.global_step >= profile_from_ && st_.global_step < profile_to_) profiler_.start();
  StepTimer& timer = recorder_.begin_step();
  Batch b = loader_->get(st_.epoch, st_.step_in_epoch);
  auto x = b.x.to(dev_, /*non_blocking=*/true), y = b.y.to(dev_, true);
  if (h_.channels_last()) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  timer.mark(kData);

  const double lr = schedule_.lr_at(st_.global_step);
  const StepOut out = exec_.run(StepInput{x, y, lr, st_.global_step}, st_.loss_scale, timer);

  ++st_.global_step;
  test_hooks();
  const bool ckpt_due =
      lead_ && j_.checkpoint_minutes > 0 && seconds_since(last_ckpt_) >= j_.checkpoint_minutes * 60.0;
  auto flags =
      comm_.allreduce_sum(std::vector<double>{StopSignal::received() ? 1.0 : 0.0, ckpt_due ? 1.0 : 0.0});
  timer.mark(kStep);
  if (st_.global_step >= profile_to_) profiler_.stop();
  recorder_.record(StepRecord{out.loss, out.correct, y.size(0), out.sync.comm_s}, st_);
  // Liveness for the scheduler's watchdog (gridrun run): at most one write a second.
  heartbeat_.beat(progress());
  return flags;
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

// Some rank got SIGTERM/SIGUSR1: all ranks stop at this step boundary, checkpoint and exit 75.
int TrainLoop::interrupt(const EpochClock& ec) {
  recorder_.drain(st_);
  heartbeat_.beat(progress(), true);  // where this attempt ended, for `gridrun status`
  ++st_.step_in_epoch;
  st_.epoch_s = ec.seconds();
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
  recorder_.drain(st_);
  TrainState mid = st_;
  ++mid.step_in_epoch;
  mid.epoch_s = ec.seconds();
  mid.wall_s = wall();
  save_checkpoint(mid);
  last_ckpt_ = Clock::now();
}

// Epoch end (or max_steps reached inside the epoch: a partial last epoch is closed the same way,
// so every run ends with an epoch row and a final evaluation): evaluation, epoch row, flush,
// checkpoint. Returns true when the job is done.
bool TrainLoop::end_epoch(const EpochClock& ec) {
  const bool partial = st_.step_in_epoch < spe_;
  st_.epoch_s = ec.seconds();
  profiler_.stop();  // a window crossing the epoch end resumes at the next step, without eval
  recorder_.drain(st_);
  EvalResult ev;
  const bool eval_now = j_.eval_every > 0 &&
                        ((st_.epoch + 1) % j_.eval_every == 0 || st_.epoch + 1 == total_epochs_ || partial);
  if (eval_now) {
    const auto t0 = Clock::now();
    ev = evaluate(model_, h_.test_set(), comm_, dev_, std::max<std::int64_t>(j_.batch_per_rank, 256));
    eval_s_ += seconds_since(t0);
  }
  if (lead_) recorder_.write_epoch_row(st_, ev.loss, ev.acc);
  recorder_.flush();
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
    // Said in the log, so that the last "epoch 3/4" line is not read as a job cut short.
    if (lead_ && !o_.quiet)
      std::printf("epoch %lld/%lld: target_accuracy %g reached (test acc %.3f), stopping\n",
                  static_cast<long long>(st_.epoch), static_cast<long long>(total_epochs_),
                  j_.target_accuracy, ev.acc),
          std::fflush(stdout);
    return true;
  }
  return st_.global_step >= total_steps_ || partial;
}

void TrainLoop::save_checkpoint(const TrainState& st) {
  const auto t0 = Clock::now();
  ckpt_.save(model_, exec_.optimizer(), st);
  ckpt_s_ += seconds_since(t0);
}

// Collective: the last rows, then the training figures of /summary (the harness adds the
// figures every job has and ends the file).
void TrainLoop::finish(results::Status status, const std::string& reason) {
  recorder_.drain(st_);
  profiler_.stop();
  results::Summary s;
  if (lead_) {
    const double fps = model_.flops_per_sample();
    s["train_flops_per_sample"] = 3.0 * fps;
    s["bytes_per_sample"] = model_.bytes_per_sample(j_.batch_per_rank, base::bytes_per_value(j_.precision));
    recorder_.summarize(s, fps);
    // Where this process's time went, from its launcher's start to now (docs/results.md,
    // "Where the time went"); NaN where a clock is unknown (no --launched-at).
    const double now = base::unix_now(), proc = base::process_start_unix();
    const double launched = o_.launched_at > 0 ? o_.launched_at : kNaN;
    s["launched_unix"] = launched;
    s["process_start_unix"] = proc;
    s["first_step_unix"] = first_step_unix_;
    s["finished_unix"] = now;
    // A warm job (issue 48) loads nothing: its launch is the launcher's message reaching the
    // worker (main_unix is when it arrived), so launch + load + set-up is still launched -> first step.
    s["launch_warm"] = o_.warm ? 1.0 : 0.0;
    s["time_launch_s"] = (o_.warm ? o_.main_unix : proc) - launched;
    s["time_load_s"] = o_.warm ? 0.0 : o_.main_unix > 0 ? o_.main_unix - proc : kNaN;
    s["time_setup_s"] = o_.main_unix > 0 ? first_step_unix_ - o_.main_unix : kNaN;
    s["time_comm_s"] = o_.comm_s;
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
