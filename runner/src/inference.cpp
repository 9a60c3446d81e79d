// Inference jobs (`task: inference`, see inference.hpp and docs/runner.md): only the loop; the
// set-up (checkpoint or random weights), results file and failure path are the JobHarness's.
//
// Batches of batch_per_rank test samples are run forward under c10::InferenceMode (no autograd
// state at all), each rank on its own shard of the test split (samples i % R == r), cycling over
// the shard when the requested batches need more samples than it has. The first
// timing_warmup_steps batches are run but left out of the timings; infer_batches more are timed.
// A batch's latency is host-to-device copy + forward (+ device synchronisation on GPU): the time
// from a batch in host memory to its logits being ready; indexing the data set is not part of it.
//
// One /steps row per batch: step_s = the slowest rank's latency (the global batch is done when
// every rank is), samples_per_s = global batch / step_s, forward_s = rank 0's latency,
// backward/optimizer/comm 0. Loss and accuracy count each test sample once (the first time it is
// seen), so with enough batches to cover the split they equal a training job's evaluation of the
// same weights exactly; the figures go into one /epochs row (test_loss, test_acc).
//
// --dump-logits FILE: every test sample's logits at its first visit, gathered to rank 0 and
// written as raw float32 [test samples, classes] in sample order (NaN rows: samples no batch
// reached). The results file holds aggregates only; this is what lets a test compare int8's
// predictions with fp32's sample by sample (tests/runner/scenarios.py inference_random_np2).
#include <c10/core/InferenceMode.h>
#include <torch/nn/functional/loss.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <torch/cuda.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "epoch_sampler.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"
#include "inference.hpp"
#include "job_harness.hpp"
#include "signals.hpp"

namespace gridrun::runner {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Linear interpolation between order statistics, like numpy.percentile's default.
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

void sync_device(bool gpu) {
#ifdef GRIDRUN_HAVE_NCCL
  if (gpu) torch::cuda::synchronize();
#else
  (void)gpu;
#endif
}

// One inference job's loop over the harness's model and test split: timed batches, one /steps
// row per batch, the /epochs row of first-visit loss and accuracy, the latency summary.
class InferLoop : private LoopBase {
 public:
  explicit InferLoop(JobHarness& h);
  // Returns kExitCompleted, or kExitInterrupted on SIGTERM/SIGUSR1 (nothing to checkpoint).
  int run();

 private:
  // One batch on every rank (collective); returns true when some rank got SIGTERM/SIGUSR1.
  bool run_batch(std::int64_t k);
  void write_row(std::int64_t k, const std::vector<double>& red, const std::vector<double>& lat,
                 double data_s, double latency);
  void finish(results::Status status, const std::string& reason);
  void dump_logits();  // collective: --dump-logits

  const bool gpu_;
  const Dataset& test_;
  const std::vector<std::int64_t> shard_;  // this rank's test samples, i % R == r
  const std::int64_t n_, b_, warm_, total_;
  Clock::time_point run_start_;
  std::vector<double> latencies_;  // slowest rank's latency of each timed batch
  std::vector<float> logits_;      // --dump-logits: first-visit logits in shard order
  std::int64_t classes_ = 0;
  double timed_samples_ = 0, timed_time_ = 0, loss_first_ = 0, correct_first_ = 0, seen_ = 0;
};

InferLoop::InferLoop(JobHarness& h)
    : LoopBase(h),
      gpu_(h.gpu()),
      test_(h.test_set()),
      shard_(eval_shard(test_.size(), rank_, world_)),
      n_(static_cast<std::int64_t>(shard_.size())),
      b_(j_.batch_per_rank),
      warm_(j_.timing_warmup_steps),
      total_(warm_ + j_.infer_batches) {
  model_.eval();
  Model::Int8Summary q8;
  if (j_.quantize == "int8") q8 = model_.quantize_linear_int8();
  if (n_ == 0)
    throw BadInput("gridrun-train: the test split has " + std::to_string(test_.size()) +
                   " samples, fewer than ranks=" + std::to_string(world_));
  ResultsStart rs;
  rs.str_attrs["checkpoint_file"] = h_.weights_file();
  rs.int_attrs["quantized_linear_layers"] = q8.layers;
  rs.int_attrs["quantized_linear_weights"] = q8.weights;
  rs.int_attrs["int8_weights_changed"] = q8.weights_changed;
  h_.open_results(rs);
  if (lead_ && !o_.quiet)
    std::printf(
        "gridrun-train %s: inference %s on %s, %d rank(s), batch %lld per rank, "
        "%lld+%lld batches, %s\n",
        o_.id.c_str(), j_.model.c_str(), j_.dataset.c_str(), world_, static_cast<long long>(b_),
        static_cast<long long>(warm_), static_cast<long long>(j_.infer_batches),
        h_.weights_file().empty() ? "random weights" : h_.weights_file().c_str()),
        std::fflush(stdout);
  run_start_ = Clock::now();
}

int InferLoop::run() {
  for (std::int64_t k = 0; k < total_; ++k) {
    if (run_batch(k)) {  // every rank stops at this batch
      finish(results::Status::Interrupted, "interrupted by signal after batch " + std::to_string(k + 1) +
                                               " (inference keeps no checkpoint; rerun to start over)");
      return kExitInterrupted;
    }
  }
  finish(results::Status::Completed, "completed");
  return kExitCompleted;
}

bool InferLoop::run_batch(std::int64_t k) {
  const auto t_data = Clock::now();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(b_));
  for (std::int64_t i = 0; i < b_; ++i)
    idx[static_cast<std::size_t>(i)] = shard_[static_cast<std::size_t>((k * b_ + i) % n_)];
  // Positions k*b .. k*b+b-1 of the cycled shard: the leading `fresh` ones are first visits.
  const std::int64_t fresh = std::clamp<std::int64_t>(n_ - k * b_, 0, b_);
  Batch bt = test_.get(idx);
  const double data_s = seconds_since(t_data);

  sync_device(gpu_);
  const auto t0 = Clock::now();
  torch::Tensor out, y;
  {
    c10::InferenceMode im;
    auto x = bt.x.to(dev_);
    y = bt.y.to(dev_);
    out = model_.forward(x);
    sync_device(gpu_);
  }
  const double latency = seconds_since(t0);

  torch::Tensor losses, hits;
  {
    c10::InferenceMode im;
    losses = torch::nn::functional::cross_entropy(
        out.to(torch::kFloat32), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    hits = out.argmax(1).eq(y).to(torch::kFloat64);
  }
  if (!o_.dump_logits.empty() && fresh > 0) {
    const auto l = out.slice(0, 0, fresh).to(torch::kCPU, torch::kFloat32).contiguous();
    classes_ = l.size(1);
    logits_.insert(logits_.end(), l.data_ptr<float>(), l.data_ptr<float>() + l.numel());
  }
  const double fresh_loss = fresh > 0 ? losses.slice(0, 0, fresh).sum().item<double>() : 0.0;
  const double fresh_hits = fresh > 0 ? hits.slice(0, 0, fresh).sum().item<double>() : 0.0;
  const auto red = comm_.allreduce_sum(
      std::vector<double>{losses.sum().item<double>(), static_cast<double>(b_), fresh_loss, fresh_hits,
                          static_cast<double>(fresh), StopSignal::received() ? 1.0 : 0.0});
  const auto lat = comm_.gather(std::vector<double>{latency}, 0);
  loss_first_ += red[2];
  correct_first_ += red[3];
  seen_ += red[4];
  if (lead_) write_row(k, red, lat, data_s, latency);
  return red[5] > 0;
}

// Rank 0: the batch's /steps row; `red` holds the batch's sums over ranks, `lat` every rank's
// latency.
void InferLoop::write_row(std::int64_t k, const std::vector<double>& red, const std::vector<double>& lat,
                          double data_s, double latency) {
  results::StepRow row;
  row.step = k + 1;
  row.epoch = 1;
  row.wall_s = seconds_since(run_start_);
  row.loss = red[0] / red[1];
  row.step_s = *std::max_element(lat.begin(), lat.end());
  row.samples_per_s = red[1] / row.step_s;
  row.data_s = data_s;
  row.forward_s = latency;
  row.rank_step_s = lat;
  h_.writer()->append_step(row);
  if (k >= warm_) {
    latencies_.push_back(row.step_s);
    timed_samples_ += red[1];
    timed_time_ += row.step_s;
  }
  if (!o_.quiet && ((k + 1) % o_.log_every == 0 || k + 1 == total_))
    std::printf("batch %lld/%lld latency %.2f ms %.0f samples/s\n", static_cast<long long>(k) + 1,
                static_cast<long long>(total_), 1e3 * row.step_s, row.samples_per_s),
        std::fflush(stdout);
}

// Collective: rank 0's /epochs row and the inference figures of /summary (the harness adds the
// figures every job has and ends the file).
void InferLoop::finish(results::Status status, const std::string& reason) {
  results::Summary s;
  if (lead_) {
    results::EpochRow er;
    er.epoch = 1;
    er.train_loss = er.train_acc = kNaN;
    er.test_loss = seen_ > 0 ? loss_first_ / seen_ : kNaN;
    er.test_acc = seen_ > 0 ? correct_first_ / seen_ : kNaN;
    er.epoch_s = er.wall_s = seconds_since(run_start_);
    h_.writer()->append_epoch(er);
    const double sps = timed_time_ > 0 ? timed_samples_ / timed_time_ : kNaN;
    s["latency_p50_s"] = percentile(latencies_, 50);
    s["latency_p90_s"] = percentile(latencies_, 90);
    s["latency_p99_s"] = percentile(latencies_, 99);
    s["samples_per_s"] = sps;
    s["test_samples_seen"] = seen_;
    s["bytes_per_sample"] = model_.bytes_per_sample(b_, gpu_ ? base::bytes_per_value(j_.precision) : 4.0);
    s["flops_per_s"] = model_.flops_per_sample() * sps;  // forward only
    if (!o_.quiet)
      std::printf(
          "inference: test acc %.4f over %.0f samples, latency p50 %.2f ms p99 %.2f ms, "
          "%.0f samples/s\n",
          er.test_acc, seen_, 1e3 * s["latency_p50_s"], 1e3 * s["latency_p99_s"], sps),
          std::fflush(stdout);
  }
  dump_logits();
  h_.finish(status, reason, std::move(s));
}

// Rank r's shard position p is test sample r + p * R (eval_shard); every rank sends a block of
// the largest shard's size (NaN-padded) so that one fixed-size gather collects them.
void InferLoop::dump_logits() {
  if (o_.dump_logits.empty()) return;
  const auto c = static_cast<std::int64_t>(comm_.allreduce_max({static_cast<double>(classes_)})[0]);
  const std::int64_t n = test_.size(), s = (n + world_ - 1) / world_;
  std::vector<double> mine(static_cast<std::size_t>(s * c), kNaN);
  std::copy(logits_.begin(), logits_.end(), mine.begin());
  const auto all = comm_.gather(mine, 0);
  if (!lead_) return;
  std::vector<float> rows(static_cast<std::size_t>(n * c), std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t r = 0; r < world_; ++r)
    for (std::int64_t p = 0; p < s && r + p * world_ < n; ++p)
      for (std::int64_t k = 0; k < c; ++k)
        rows[static_cast<std::size_t>((r + p * world_) * c + k)] =
            static_cast<float>(all[static_cast<std::size_t>((r * s + p) * c + k)]);
  base::write_file_atomic(
      o_.dump_logits, std::string(reinterpret_cast<const char*>(rows.data()), rows.size() * sizeof(float)));
}

}  // namespace

int infer(const RunnerOptions& o, Communicator& comm) {
  HarnessOptions ho;
  ho.training = false;
  ho.checkpoint = o.job.checkpoint;
  JobHarness h(o, comm, ho);
  return h.run([&h] {
    InferLoop loop(h);
    return loop.run();
  });
}

}  // namespace gridrun::runner
