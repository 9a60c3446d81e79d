// Benchmark: generating the sbatch scripts and job lists for 10,000 jobs (target < 1 s).
//
// Measures generate_scripts on 10,000 jobs of 4 shapes (cpu 1/2 ranks, gpu 1/2 ranks) split at
// MaxArraySize 1001, plus the same with --pack-nodes (the 1-GPU jobs bundled through the scheduler's
// placement engine), and writing the files to a temp dir. Reference measured in the same run:
// serialising the same 10,000 job files in memory (jobs::job_to_json), work every submit does
// anyway, so the ratio says what the scripts add to it. Median of 7 runs.
// Usage: bench_slurm_scripts [JOBS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/slurm/script.hpp"
#include "gridrun/slurm/submit.hpp"

using namespace gridrun;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double time_s(F&& f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int reps = 7;
  std::vector<jobs::Job> js;
  js.reserve(n);
  for (int i = 0; i < n; ++i) {
    jobs::JobParams p;
    p.device = i % 4 < 2 ? jobs::Device::cpu : jobs::Device::gpu;
    p.ranks = 1 + i % 2;
    p.global_batch = p.batch_per_rank * p.ranks;
    p.seed = i;
    jobs::Job j;
    j.params = p;
    j.id = jobs::job_id(j.params);
    j.run = "bench";
    j.index = static_cast<std::size_t>(i);
    js.push_back(std::move(j));
  }
  const auto tmp = std::filesystem::temp_directory_path() / "gridrun-bench-slurm";
  std::filesystem::create_directories(tmp / "slurm");
  slurm::ScriptOptions o;
  o.run_dir = tmp.string();
  o.run_name = "bench";
  o.grid_file = "/grids/bench.yaml";
  o.out_dir = "/runs";
  o.max_array = 1001;

  std::vector<double> gen, pack, write, ref;
  std::size_t bytes = 0, arrays = 0, bundles = 0;
  for (int r = 0; r < reps; ++r) {
    slurm::ScriptSet set;
    gen.push_back(time_s([&] { set = slurm::generate_scripts(js, {}, o); }));
    arrays = set.arrays.size();
    bytes = 0;
    for (const auto& a : set.arrays) bytes += a.script.size() + a.job_list.size();
    write.push_back(time_s([&] { slurm::write_script_set(set); }));
    ref.push_back(time_s([&] {
      std::size_t total = 0;
      for (const auto& j : js) total += jobs::job_to_json(j).size();
      if (total == 0) std::abort();
    }));
    pack.push_back(time_s([&] {
      auto pk = slurm::pack_jobs(js, 4, 32, o);
      auto ps = slurm::generate_scripts(pk.rest, pk.bundles, o);
      bundles = pk.bundles.size();
    }));
  }
  std::filesystem::remove_all(tmp);
  std::printf("jobs %d, arrays %zu, %zu bytes of scripts + job lists; median of %d runs\n", n, arrays, bytes,
              reps);
  std::printf("  generate_scripts            %8.4f s\n", median(gen));
  std::printf("  pack_jobs + generate        %8.4f s  (%zu whole-node bundles)\n", median(pack), bundles);
  std::printf("  write_script_set            %8.4f s\n", median(write));
  std::printf("  reference: job_to_json x N  %8.4f s  (generate / reference = %.2fx)\n", median(ref),
              median(gen) / std::max(median(ref), 1e-9));
  std::printf("  target < 1 s for generate: %s\n", median(gen) < 1.0 ? "met" : "NOT met");
  return 0;
}
