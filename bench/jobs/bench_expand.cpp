// Benchmark: load, validate and expand a grid of 100,000 jobs (target: under 1 s on the 2-core
// development machine). Each run is a fresh forked process. Prints each run, the median of N runs
// (default 5) and, as a reference
// measured in the same run, the median time of job_id() alone over the same 100,000 jobs: the
// floor that any expansion must pay, so the ratio shows the loader's own overhead.
//   bench_expand [RUNS]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "gridrun/jobs/grid.hpp"

namespace gj = gridrun::jobs;

namespace {

// 5 models x 10 lr x 4 batch sizes x 5 rank counts x 2 optimizers x a 2-row zip x 25 seeds =
// 100,000 jobs. The exclude entry matches nothing (one warning) but is checked against every job.
std::string grid_yaml() {
  std::string seeds;
  for (int i = 0; i < 25; ++i) seeds += (i ? ", " : "") + std::to_string(i);
  return "name: bench\n"
         "defaults: {dataset: synthetic, epochs: 1, device: cpu, threads_per_rank: 1}\n"
         "grid:\n"
         "  model: [mlp, lenet, resnet18, resnet50, vgg11]\n"
         "  lr: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]\n"
         "  batch_per_rank: [16, 32, 64, 128]\n"
         "  ranks: [1, 2, 4, 8, 16]\n"
         "  optimizer: [sgd, adam]\n"
         "zip:\n"
         "  warmup_steps: [0, 100]\n"
         "  lr_schedule: [constant, cosine]\n"
         "exclude:\n"
         "  - {model: alexnet, optimizer: adam}\n"
         "seeds: [" +
         seeds + "]\n";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of this process: on a shared machine, wall time also counts other programs' slices.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Sample {
  double expand_s, expand_cpu_s, hash_s;
  std::size_t jobs;
};

// One measurement in a forked child, so every run starts from a fresh heap as `gridrun plan` does
// (in one process, freeing a run's 3 million map nodes taxes the next run's allocations), and the
// child exits without tearing the expansion down.
Sample measure_in_child(const std::string& yaml) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  const pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    close(fds[0]);
    Sample s{};
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    gj::Expansion ex = gj::load_grid_string(yaml, "bench.yaml");
    s.expand_cpu_s = cpu_seconds() - c0;
    s.expand_s = seconds_since(t0);
    s.jobs = ex.jobs.size();
    t0 = std::chrono::steady_clock::now();
    std::size_t sink = 0;
    for (const auto& j : ex.jobs) sink += static_cast<unsigned char>(gj::job_id(j.params)[0]);
    s.hash_s = seconds_since(t0);
    if (sink == 0) s.jobs = 0;  // keeps the loop from being optimised away
    ssize_t n = write(fds[1], &s, sizeof s);
    _exit(n == static_cast<ssize_t>(sizeof s) ? 0 : 1);
  }
  close(fds[1]);
  Sample s{};
  ssize_t n = read(fds[0], &s, sizeof s);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n != static_cast<ssize_t>(sizeof s) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench_expand: measurement child failed\n");
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::string yaml = grid_yaml();
  std::vector<double> expand_s, expand_cpu_s, hash_s;
  std::size_t jobs = 0;
  for (int r = 0; r < runs; ++r) {
    const Sample s = measure_in_child(yaml);
    expand_s.push_back(s.expand_s);
    expand_cpu_s.push_back(s.expand_cpu_s);
    hash_s.push_back(s.hash_s);
    jobs = s.jobs;
    std::printf("run %d: %zu jobs, expand+validate %.3f s (cpu %.3f s), job_id only %.3f s\n", r + 1, jobs,
                s.expand_s, s.expand_cpu_s, s.hash_s);
  }
  const double m = median(expand_s), h = median(hash_s);
  std::printf(
      "median of %d: expand+validate %zu jobs in %.3f s wall, %.3f s cpu (%.2f us/job);\n"
      "job_id reference %.3f s; ratio %.1fx; target < 1 s wall: %s\n",
      runs, jobs, m, median(expand_cpu_s), 1e6 * m / static_cast<double>(jobs), h, m / h,
      m < 1.0 ? "met" : "MISSED");
  return 0;
}
