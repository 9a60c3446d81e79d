// The training loop's rows and figures (step_recorder.hpp says why they wait for an interval's end
// and why they are a type of their own).
#include "step_recorder.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gridrun/base/text.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

StepRecorder::StepRecorder(JobHarness& h, const RecorderOptions& ro)
    : LoopBase(h), ro_(ro), timer_(h.gpu()) {}

StepTimer& StepRecorder::begin_step() {
  timer_.start(pending_.size());
  return timer_;
}

void StepRecorder::record(const StepRecord& r, TrainState& st) {
  pending_.loss.push_back(r.loss);
  pending_.correct.push_back(r.correct);
  pending_.n.push_back(static_cast<double>(r.samples));
  if (lead_) {
    results::StepRow row;
    row.step = st.global_step;
    row.epoch = st.epoch + 1;
    row.wall_s = ro_.wall->seconds();
    row.comm_s = r.comm_s;
    pending_.rows.push_back(row);
  }
  if (static_cast<std::int64_t>(pending_.size()) >= o_.log_every) drain(st);
  if (lead_ && seconds_since(last_flush_) >= 30.0) flush();
}

// Writes the pending steps (collective): one device read of the interval's loss and correct
// counts, one host allreduce of them, one gather of the per-rank phase times to rank 0.
void StepRecorder::drain(TrainState& st) {
  const std::size_t k = pending_.size();
  if (k == 0) return;
  const auto red = interval_metrics();  // per step: loss * n, correct, n (all ranks)
  if (st.global_step - static_cast<std::int64_t>(k) >= j_.timing_warmup_steps) {
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
  check_divergence(red, st.global_step - static_cast<std::int64_t>(k) + 1);
  const auto all = comm_.gather(mine, 0);
  for (std::size_t i = 0; i < k; ++i) {
    st.epoch_loss_sum += red[3 * i];
    st.epoch_correct += red[3 * i + 1];
    st.epoch_count += red[3 * i + 2];
    const std::int64_t step = st.global_step - static_cast<std::int64_t>(k - 1 - i);
    if (step > j_.timing_warmup_steps) {
      timing_samples_ += red[3 * i + 2];
      timing_time_ += times[i][kStep];
    }
  }
  if (lead_) write_rows(red, times, all);
  pending_.clear();
}

std::vector<double> StepRecorder::interval_metrics() {
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
void StepRecorder::write_rows(const std::vector<double>& red,
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
    if (!o_.quiet && (row.step % o_.log_every == 0 || row.step == ro_.total_steps))
      std::printf(
          "step %lld/%lld epoch %lld/%lld loss %.4f acc %.3f %.0f samples/s "
          "step %.1f ms comm %.1f ms\n",
          static_cast<long long>(row.step), static_cast<long long>(ro_.total_steps),
          static_cast<long long>(row.epoch), static_cast<long long>(ro_.total_epochs), row.loss,
          red[3 * i + 1] / red[3 * i + 2], row.samples_per_s, 1e3 * row.step_s, 1e3 * row.exposed_comm_s),
          std::fflush(stdout);
  }
}

// Called with every interval's all-reduced metrics (identical on every rank).
void StepRecorder::check_divergence(const std::vector<double>& red, std::int64_t first_step) {
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

void StepRecorder::flush() {
  if (lead_) h_.writer()->flush();
  last_flush_ = Clock::now();
}

void StepRecorder::write_epoch_row(const TrainState& st, double test_loss, double test_acc) {
  results::EpochRow er;
  er.epoch = st.epoch + 1;
  er.train_loss = st.epoch_count > 0 ? st.epoch_loss_sum / st.epoch_count : kNaN;
  er.train_acc = st.epoch_count > 0 ? st.epoch_correct / st.epoch_count : kNaN;
  er.test_loss = test_loss;
  er.test_acc = test_acc;
  er.epoch_s = st.epoch_s;
  er.wall_s = ro_.wall->seconds();
  h_.writer()->append_epoch(er);
  if (!o_.quiet)
    std::printf("epoch %lld/%lld train loss %.4f acc %.3f test loss %.4f acc %.3f (%.1f s)\n",
                static_cast<long long>(er.epoch), static_cast<long long>(ro_.total_epochs), er.train_loss,
                er.train_acc, er.test_loss, er.test_acc, er.epoch_s),
        std::fflush(stdout);
}

void StepRecorder::summarize(results::Summary& s, double flops_per_sample) const {
  const double sps = timing_time_ > 0 ? timing_samples_ / timing_time_ : kNaN;
  s["flops_per_s"] = 3.0 * flops_per_sample * sps;
  if (wall_tp_.samples > 0) s["samples_per_s_wall"] = wall_tp_.per_s();
  if (!rank_max_step_s_.empty()) {
    double sum = 0;
    for (double v : rank_max_step_s_) sum += v;
    s["rank_max_step_s_mean"] = sum / static_cast<double>(rank_max_step_s_.size());
  }
}

}  // namespace gridrun::runner
