// Benchmarks for gridrun::results (numbers recorded in BENCHMARKS.md).
//  1. JobWriter: append_step + flush every F rows, per row (budget: < 10 us/row), with the
//     append-only cost as the reference measured in the same run.
//  2. UtilReader::sample(): cost of one sample (1 rank, no GPU here), and the share of one core it
//     takes at 10 Hz (budget: < 0.5 % of step time); plus a fixed CPU workload timed with and
//     without a 10 Hz UtilSampler thread (ratio, same run).
//  3. read_job of a finished job file (2,000 step rows, 1 rank) with the forked-copy check
//     (ReadOptions::isolate, issue 24) against the same read without it: per file, summary only
//     (what `run` and `status` read) and whole (what `collect` and `report` read).
// Each figure is the median of --runs (default 7) repetitions.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gridrun/hw/util_sampler.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"

using namespace gridrun::results;
using namespace gridrun::hw;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// us per row for `rows` rows with a flush every `every` rows (0 = only at the end).
double writer_run(const std::string& dir, int rows, int every, int ranks) {
  JobFileInfo info;
  info.id = "bench";
  info.params = gridrun::jobs::job_params_from_json("{\"model\":\"mlp\"}");
  info.ranks = ranks;
  info.flush_interval_s = 0;
  auto w = JobWriter::create(dir, info);
  StepRow r;
  r.rank_step_s.assign(ranks, 0.1);
  auto t0 = Clock::now();
  for (int i = 0; i < rows; ++i) {
    r.step = i;
    r.wall_s = i * 0.1;
    w->append_step(r);
    if (every > 0 && (i + 1) % every == 0) w->flush();
  }
  w->flush();
  double us = seconds_since(t0) * 1e6 / rows;
  w->finish(Status::Completed, "bench", {});
  fs::remove(dir + "/bench.h5");
  return us;
}

double busy_work(int steps) {
  // A fixed amount of arithmetic standing in for training steps.
  volatile double x = 0;
  auto t0 = Clock::now();
  for (int s = 0; s < steps; ++s)
    for (int i = 0; i < 200000; ++i) x = x + std::sqrt(static_cast<double>(i + s));
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--runs") runs = std::max(5, std::atoi(argv[i + 1]));
  std::string dir = (fs::temp_directory_path() / ("gridrun-bench-" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  const int rows = 20000;
  std::printf("bench_results: median of %d runs\n", runs);
  for (int ranks : {1, 8}) {
    std::vector<double> none, f100, f1000;
    for (int k = 0; k < runs; ++k) {
      none.push_back(writer_run(dir, rows, 0, ranks));
      f100.push_back(writer_run(dir, rows, 100, ranks));
      f1000.push_back(writer_run(dir, rows, 1000, ranks));
    }
    std::printf(
        "writer ranks=%d: append+flush at end %.3f us/row | flush every 1000 rows %.3f us/row"
        " | flush every 100 rows %.3f us/row (budget 10)\n",
        ranks, median(none), median(f1000), median(f100));
  }

  UtilReaderOptions po;
  po.gpus = false;
  UtilReader probe(po);
  std::vector<double> per_sample;
  for (int k = 0; k < runs; ++k) {
    const int n = 2000;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) probe.sample();
    per_sample.push_back(seconds_since(t0) * 1e6 / n);
  }
  double us = median(per_sample);
  std::printf("sampler: %.1f us/sample (1 rank, no GPU) -> %.4f %% of one core at 10 Hz (budget 0.5 %%)\n",
              us, us * 10 / 1e6 * 100);

  std::vector<double> off, on;
  for (int k = 0; k < runs; ++k) {
    off.push_back(busy_work(100));
    std::size_t rows_seen = 0;
    {
      UtilSampler s(std::make_unique<UtilReader>(po), SamplerOptions{10.0},
                    [&](const UtilRow&) { ++rows_seen; });
      on.push_back(busy_work(100));
    }
  }
  std::printf("workload %.3f s without sampler, %.3f s with a 10 Hz sampler: ratio %.4f\n", median(off),
              median(on), median(on) / median(off));

  {
    JobFileInfo info;
    info.id = "readme";
    info.params = gridrun::jobs::job_params_from_json("{\"model\":\"mlp\"}");
    info.ranks = 1;
    auto w = JobWriter::create(dir, info);
    StepRow r;
    r.rank_step_s.assign(1, 0.1);
    for (int i = 0; i < 2000; ++i) {
      r.step = i;
      r.wall_s = i * 0.1;
      w->append_step(r);
    }
    w->finish(Status::Completed, "bench", {});
  }
  const std::string file = dir + "/readme.h5";
  for (bool tables : {false, true}) {
    std::vector<double> plain, isolated;
    for (int k = 0; k < runs; ++k) {
      for (bool iso : {false, true}) {
        ReadOptions ro;
        ro.tables = tables;
        ro.isolate = iso;
        const int n = 50;
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) read_job(file, ro);
        (iso ? isolated : plain).push_back(seconds_since(t0) * 1e3 / n);
      }
    }
    std::printf("read_job %s: %.3f ms plain, %.3f ms with the forked-copy check: ratio %.2f\n",
                tables ? "whole file (2,000 step rows)" : "summary only", median(plain), median(isolated),
                median(isolated) / median(plain));
  }
  fs::remove_all(dir);
  return 0;
}
