// Portable epoch permutations and per-rank shards (see epoch_sampler.hpp for the contract).
#include "epoch_sampler.hpp"

#include <stdexcept>

#include "gridrun/base/splitmix.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

using base::splitmix64_next;

EpochSampler::EpochSampler(std::int64_t n, std::int64_t batch_per_rank, int rank, int world,
                           std::uint64_t seed)
    : n_(n), b_(batch_per_rank), rank_(rank), world_(world), seed_(seed) {
  if (n_ < b_ * world_)
    throw BadInput("gridrun-train: the training split has " + std::to_string(n_) +
                   " samples, fewer than one global batch (" + std::to_string(b_ * world_) +
                   "); lower batch_per_rank or raise train_samples");
}

std::int64_t EpochSampler::steps_per_epoch() const { return n_ / (b_ * world_); }

std::vector<std::int64_t> EpochSampler::permutation(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> p(n);
  for (std::int64_t i = 0; i < n; ++i) p[i] = i;
  std::uint64_t s = seed * 0x100000001B3ull ^ (static_cast<std::uint64_t>(epoch) + 0x5bd1e995ull);
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(splitmix64_next(s) % static_cast<std::uint64_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

std::vector<std::int64_t> EpochSampler::indices(std::int64_t epoch, std::int64_t step) {
  if (step < 0 || step >= steps_per_epoch()) throw std::out_of_range("EpochSampler: step");
  if (epoch != cached_epoch_) {
    perm_ = permutation(n_, seed_, epoch);
    cached_epoch_ = epoch;
  }
  const std::int64_t start = step * b_ * world_ + rank_ * b_;
  return std::vector<std::int64_t>(perm_.begin() + start, perm_.begin() + start + b_);
}

std::vector<std::int64_t> eval_shard(std::int64_t n, int rank, int world) {
  std::vector<std::int64_t> out;
  out.reserve(n / world + 1);
  for (std::int64_t i = rank; i < n; i += world) out.push_back(i);
  return out;
}

}  // namespace gridrun::runner
