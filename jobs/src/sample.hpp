// Sampled values of a grid's `sample:` section (docs/grid.md, "Sampled axes"): a portable
// generator and the mapping of its bits onto each distribution. Not installed.
//
// Why our own generator and mappings: a sampled value is part of a job's id, so the same grid and
// seed must give the same values on every machine and standard library. The <random>
// distributions (uniform_real_distribution, ...) are implementation-defined; splitmix64 and the
// arithmetic below are not. Floats are rounded to 4 significant digits, which also absorbs any
// last-bit difference between two platforms' exp and log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs::detail {

enum class Dist { Uniform, LogUniform, RandInt, LogRandInt, Choice };

// The distributions' names as written in a grid, in Dist order.
const std::vector<std::string>& dist_names();

struct Distribution {
  Dist kind = Dist::Uniform;
  double low = 0, high = 0;  // uniform, loguniform: [low, high]
  // randint, lograndint: both included. Kept as integers: a double cannot hold every int64 (2^63 - 1
  // rounds up to 2^63, which no int64 holds).
  std::int64_t int_low = 0, int_high = 0;
  std::vector<Value> choices;  // choice: each equally likely
};

// The n values of one sampled parameter. Each parameter draws from its own stream, seeded by the
// sample's seed and the parameter's name, so adding a parameter to the sample or raising n never
// changes the values another parameter (or an earlier point) had.
std::vector<Value> draw_values(const Distribution& d, std::uint64_t seed, const std::string& param,
                               std::size_t n);

// x rounded to `digits` significant decimal digits, exactly (std::to_chars / std::from_chars).
double round_significant(double x, int digits);

}  // namespace gridrun::jobs::detail
