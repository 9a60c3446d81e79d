// Gradient allreduce per step (GradSync: bucketing, copy into flat buffers, reduction on the
// communicator's progress thread, averaging, copy back) vs ONE raw MPI_Allreduce of a flat buffer
// of the same total size, on the same ranks, interleaved, median of many repetitions.
// This benchmark includes mpi.h on purpose: the raw call is the reference being compared against,
// so it must not go through gridrun's communicator. Run: mpirun -np 2 bench_runner_allreduce MODEL BUCKET_MB
// REPS
#define OMPI_SKIP_MPICXX 1  // C API only
#include <mpi.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "grad_sync.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/model.hpp"

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gridrun::runner;
  if (argc != 4) {
    std::fprintf(stderr, "usage: mpirun -np R %s MODEL BUCKET_MB REPS\n", argv[0]);
    return 2;
  }
  auto comm = make_communicator("mpi", CommOptions{120});
  torch::set_num_threads(1);
  ModelSpec spec;
  spec.name = argv[1];
  auto model = make_model(spec);
  auto params = model->parameters();
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  GradSync sync(params, *comm, GradSyncOptions{std::atof(argv[2]), /*overlap=*/false});
  std::int64_t n = 0;
  for (auto& p : params) n += p.numel();
  auto flat = torch::randn({n});
  const int reps = std::atoi(argv[3]);
  std::vector<double> t_sync, t_raw;
  using Clock = std::chrono::steady_clock;
  for (int r = 0; r < reps + 3; ++r) {
    comm->barrier();
    auto t0 = Clock::now();
    sync.begin_step();
    sync.finish();
    const double a = std::chrono::duration<double>(Clock::now() - t0).count();
    comm->barrier();
    t0 = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double b = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r >= 3) {
      t_sync.push_back(a);
      t_raw.push_back(b);
    }
  }
  if (comm->rank() == 0)
    std::printf("%s params=%lld bytes=%lld buckets=%zu gradsync_ms=%.3f raw_ms=%.3f ratio=%.3f\n",
                spec.name.c_str(), static_cast<long long>(n), static_cast<long long>(4 * n),
                sync.num_buckets(), 1e3 * median(t_sync), 1e3 * median(t_raw),
                median(t_sync) / median(t_raw));
  return 0;
}
