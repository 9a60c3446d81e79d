// splitmix64 (Steele, Lea, Flood 2014): the one pseudo-random sequence gridrun uses where a value
// must be the same on every platform, compiler and build (the distributions of <random> are
// implementation-defined): the points of a sampled grid axis (jobs/, part of the jobs' ids) and the
// order in which the runner visits the data each epoch (runner/, part of bitwise-equal losses).
// Written once here so that both stay the same sequence.
#pragma once

#include <cstdint>

namespace gridrun::base {

// The sequence's next value; advances `state`.
inline std::uint64_t splitmix64_next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One value mixed (the value after state `x`): a hash of `x`, for keys built from several numbers.
inline std::uint64_t splitmix64_mix(std::uint64_t x) { return splitmix64_next(x); }

}  // namespace gridrun::base
