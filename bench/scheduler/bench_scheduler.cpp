// Benchmark: schedule 100,000 queued jobs on a simulated 1,000-node x 4-GPU cluster (the issue's
// target: < 2 s), with the packed policy (the expensive one: shapes, reservations) and fifo as the
// reference measured in the same run. Prints the median of N runs (default 5).
// Usage: bench_scheduler [runs] [jobs] [nodes]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gridrun/scheduler/simulate.hpp"

using namespace gridrun::scheduler;

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  const int n_jobs = argc > 2 ? std::atoi(argv[2]) : 100000;
  const int n_nodes = argc > 3 ? std::atoi(argv[3]) : 1000;
  Cluster c;
  for (int i = 0; i < n_nodes; ++i) {
    Node n;
    n.name = "node" + std::to_string(i);  // a host name
    for (int k = 0; k < 32; ++k) n.cores.push_back(k);
    for (int k = 0; k < 4; ++k) n.gpus.push_back(std::to_string(k));
    c.nodes.push_back(std::move(n));
  }
  // A sweep-like mix: 1, 2 and 4 GPU ranks with 2-8 threads each, durations 10 min - 4 h.
  std::mt19937 rng(42);
  std::vector<SimJob> jobs(static_cast<std::size_t>(n_jobs));
  for (int i = 0; i < n_jobs; ++i) {
    SimJob& j = jobs[static_cast<std::size_t>(i)];
    j.id = std::to_string(i);
    const int ranks = std::vector<int>{1, 2, 4}[std::uniform_int_distribution<int>(0, 2)(rng)];
    j.req.ranks = ranks;
    j.req.gpus = ranks;
    j.req.threads_per_rank = std::uniform_int_distribution<int>(2, 8)(rng);
    j.req.cores = ranks * j.req.threads_per_rank;
    j.duration_s = std::uniform_real_distribution<double>(600, 4 * 3600)(rng);
  }
  std::printf("bench_scheduler: %d jobs, %d nodes x 4 GPUs x 32 cores, median of %d runs\n", n_jobs, n_nodes,
              runs);
  for (const char* policy : {"packed", "fifo"}) {
    std::vector<double> t;
    double makespan = 0, util = 0;
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const SimResult res = simulate(c, jobs, SimOptions{policy, 0});
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      makespan = res.makespan_s;
      util = res.gpu_util;
    }
    std::sort(t.begin(), t.end());
    std::printf(
        "  %-7s schedule time median %.3f s (min %.3f, max %.3f)  simulated makespan %.1f h, GPU util %.1f "
        "%%\n",
        policy, t[t.size() / 2], t.front(), t.back(), makespan / 3600, 100 * util);
  }
  return 0;
}
