// Which samples each rank reads in each step: the data-parallel contract.
//
// Every rank computes the same permutation of [0, n) from (seed, epoch) with a portable generator
// (splitmix64 + Fisher-Yates; no std::shuffle, whose output differs between standard libraries).
// Step s of an epoch covers positions [s*G, (s+1)*G) of the permutation, G = global batch; rank r
// takes the r-th contiguous slice of b = G/R samples. So R ranks x batch b see exactly the samples
// one rank x batch G would see, which is what makes the equivalence test exact. The last partial
// global batch is dropped on every rank (drop-last), so all ranks run the same number of steps;
// with reshuffling every epoch, different samples are dropped each time.
#pragma once

#include <cstdint>
#include <vector>

namespace gridrun::runner {

class EpochSampler {
 public:
  EpochSampler(std::int64_t n, std::int64_t batch_per_rank, int rank, int world, std::uint64_t seed);
  std::int64_t steps_per_epoch() const;  // floor(n / (batch_per_rank * world)); >= 1 enforced
  // Sample indices of this rank for step `step` (0-based within the epoch) of `epoch`.
  std::vector<std::int64_t> indices(std::int64_t epoch, std::int64_t step);
  // The permutation of epoch `epoch` (exposed for tests).
  static std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch);

 private:
  std::int64_t n_, b_;
  int rank_, world_;
  std::uint64_t seed_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> perm_;
};

// Indices evaluated by `rank` on a test split of n samples: i with i % world == rank, in order.
std::vector<std::int64_t> eval_shard(std::int64_t n, int rank, int world);

}  // namespace gridrun::runner
