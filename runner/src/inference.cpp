// Inference jobs (`task: inference`, see trainer.hpp and docs/runner.md).
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
#include <c10/core/InferenceMode.h>
#include <torch/nn/functional/loss.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <torch/cuda.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "gridrun/results/sampler.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/runner/checkpoint.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"
#include "gridrun/runner/sampler.hpp"
#include "gridrun/runner/signals.hpp"
#include "gridrun/runner/system_info.hpp"
#include "gridrun/runner/trainer.hpp"
#include "run_common.hpp"

namespace gridrun::runner {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

}  // namespace

int infer(const RunnerOptions& o, Communicator& comm) {
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
  // Resolved before anything is written: a missing checkpoint is bad input (exit 2).
  const std::string state_file =
      j.checkpoint.empty() ? std::string() : resolve_checkpoint(j.checkpoint, o.out_dir);

  torch::manual_seed(static_cast<std::uint64_t>(j.seed));
  DataSplits data = make_dataset(DatasetOptions{j.dataset, j.data_dir, j.train_samples,
                                                j.test_samples, is_text_model(j.model)});
  ModelSpec spec{j.model,           data.input.channels, data.input.height, data.input.width,
                 data.input.num_classes, data.input.vocab, data.input.seq_len};
  std::shared_ptr<Model> model = make_model(spec);
  model->to(dev);
  if (!state_file.empty()) {
    load_model_weights(state_file, *model);
  } else {  // random weights, identical on every rank
    torch::NoGradGuard ng;
    for (auto& p : model->parameters()) comm.broadcast(p.data(), 0);
    for (auto& b : model->buffers()) comm.broadcast(b, 0);
  }
  model->eval();
  std::int64_t quantized = 0;
  if (j.quantize == "int8") quantized = model->quantize_linear_int8();

  const Dataset& test = *data.test;
  const auto shard = eval_shard(test.size(), rank, world);
  const auto n = static_cast<std::int64_t>(shard.size());
  if (n == 0)
    throw BadInput("gridrun-train: the test split has " + std::to_string(test.size()) +
                   " samples, fewer than ranks=" + std::to_string(world));
  const std::int64_t b = j.batch_per_rank, warm = j.timing_warmup_steps;
  const std::int64_t total = warm + j.infer_batches;

  // Results (rank 0) and utilisation sampling, as for training.
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
    auto info = detail::file_info(o, comm, hosts, *model, *probe, 0);
    info.str_attrs["checkpoint_file"] = state_file;
    info.int_attrs["quantized_linear_layers"] = quantized;
    writer = results::JobWriter::create(o.out_dir, info);
    if (o.util_hz > 0) {
      results::JobWriter* w = writer.get();
      util = std::make_unique<results::UtilSampler>(
          std::move(probe), results::SamplerOptions{o.util_hz},
          [w](const results::UtilRow& row) { w->append_util(row); });
    }
    if (!o.quiet)
      std::printf("gridrun-train %s: inference %s on %s, %d rank(s), batch %lld per rank, "
                  "%lld+%lld batches, %s\n",
                  o.id.c_str(), j.model.c_str(), j.dataset.c_str(), world,
                  static_cast<long long>(b), static_cast<long long>(warm),
                  static_cast<long long>(j.infer_batches),
                  state_file.empty() ? "random weights" : state_file.c_str()),
          std::fflush(stdout);
  }

  const auto run_start = Clock::now();
  std::vector<double> latencies, rank_max;
  double timed_samples = 0, timed_time = 0, loss_first = 0, correct_first = 0, seen = 0;
  results::Status status = results::Status::Completed;
  std::string reason = "completed";
  try {
    for (std::int64_t k = 0; k < total; ++k) {
      const auto t_data = Clock::now();
      std::vector<std::int64_t> idx(static_cast<std::size_t>(b));
      for (std::int64_t i = 0; i < b; ++i)
        idx[static_cast<std::size_t>(i)] = shard[static_cast<std::size_t>((k * b + i) % n)];
      // Positions k*b .. k*b+b-1 of the cycled shard: the leading `fresh` ones are first visits.
      const std::int64_t fresh = std::clamp<std::int64_t>(n - k * b, 0, b);
      Batch bt = test.get(idx);
      const double data_s = seconds_since(t_data);

      sync_device(gpu);
      const auto t0 = Clock::now();
      torch::Tensor out, y;
      {
        c10::InferenceMode im;
        auto x = bt.x.to(dev);
        y = bt.y.to(dev);
        out = model->forward(x);
        sync_device(gpu);
      }
      const double latency = seconds_since(t0);

      torch::Tensor losses, hits;
      {
        c10::InferenceMode im;
        losses = torch::nn::functional::cross_entropy(
            out.to(torch::kFloat32), y,
            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
        hits = out.argmax(1).eq(y).to(torch::kFloat64);
      }
      const double fresh_loss = fresh > 0 ? losses.slice(0, 0, fresh).sum().item<double>() : 0.0;
      const double fresh_hits = fresh > 0 ? hits.slice(0, 0, fresh).sum().item<double>() : 0.0;
      auto red = comm.allreduce_sum(std::vector<double>{
          losses.sum().item<double>(), static_cast<double>(b), fresh_loss, fresh_hits,
          static_cast<double>(fresh), StopSignal::received() ? 1.0 : 0.0});
      auto lat = comm.gather(std::vector<double>{latency}, 0);
      loss_first += red[2];
      correct_first += red[3];
      seen += red[4];
      if (lead) {
        results::StepRow row;
        row.step = k + 1;
        row.epoch = 1;
        row.wall_s = seconds_since(run_start);
        row.loss = red[0] / red[1];
        row.step_s = *std::max_element(lat.begin(), lat.end());
        row.samples_per_s = red[1] / row.step_s;
        row.data_s = data_s;
        row.forward_s = latency;
        row.rank_step_s = lat;
        writer->append_step(row);
        if (k >= warm) {
          latencies.push_back(row.step_s);
          timed_samples += red[1];
          timed_time += row.step_s;
        }
        if (!o.quiet && ((k + 1) % o.log_every == 0 || k + 1 == total))
          std::printf("batch %lld/%lld latency %.2f ms %.0f samples/s\n",
                      static_cast<long long>(k + 1), static_cast<long long>(total),
                      1e3 * row.step_s, row.samples_per_s),
              std::fflush(stdout);
      }
      if (red[5] > 0) {  // SIGTERM/SIGUSR1 on some rank: every rank stops at this batch
        status = results::Status::Interrupted;
        reason = "interrupted by signal after batch " + std::to_string(k + 1) +
                 " (inference keeps no checkpoint; rerun to start over)";
        break;
      }
    }

    const double peak_rss = comm.allreduce_max({static_cast<double>(peak_rss_bytes())})[0];
    if (lead) {
      results::EpochRow er;
      er.epoch = 1;
      er.train_loss = er.train_acc = kNaN;
      er.test_loss = seen > 0 ? loss_first / seen : kNaN;
      er.test_acc = seen > 0 ? correct_first / seen : kNaN;
      er.epoch_s = er.wall_s = seconds_since(run_start);
      writer->append_epoch(er);
      results::Summary s;
      const double sps = timed_time > 0 ? timed_samples / timed_time : kNaN;
      s["latency_p50_s"] = percentile(latencies, 50);
      s["latency_p90_s"] = percentile(latencies, 90);
      s["latency_p99_s"] = percentile(latencies, 99);
      s["samples_per_s"] = sps;
      s["test_samples_seen"] = seen;
      s["flops_per_sample"] = model->flops_per_sample();
      s["bytes_per_sample"] =
          model->bytes_per_sample(b, gpu && j.precision != "fp32" ? 2.0 : 4.0);
      s["flops_per_s"] = model->flops_per_sample() * sps;  // forward only
      s["model_params"] = static_cast<double>(model->parameter_count());
      s["peak_rss_bytes"] = peak_rss;
      detail::add_mfu(s, o, gpu_name);
      if (!o.quiet)
        std::printf("inference: test acc %.4f over %.0f samples, latency p50 %.2f ms p99 %.2f ms, "
                    "%.0f samples/s\n",
                    er.test_acc, seen, 1e3 * s["latency_p50_s"], 1e3 * s["latency_p99_s"], sps),
            std::fflush(stdout);
      if (util) util->stop();
      writer->finish(status, reason, s);
    }
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
  return status == results::Status::Interrupted ? kExitInterrupted : kExitCompleted;
}

}  // namespace gridrun::runner
