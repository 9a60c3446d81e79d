// Checked integer arithmetic for counts derived from what a user wrote: global batch =
// batch_per_rank x ranks, cores = ranks x threads_per_rank, steps = epochs x steps per epoch.
//
// Why: every count of a grid is a 64-bit integer the user may set to anything above its minimum,
// and a product that wraps (2^62 x 4 = 0) is a job that plans and runs with a nonsense figure
// (issue 45: a global batch of 32, `mpirun -np 0`); a signed overflow is undefined behaviour
// besides. The compilers' builtins say whether the exact result fits, at the cost of one flag test.
// A rule that refuses a job uses checked_*; code that only estimates from a job already checked
// (a prediction, a progress figure) uses saturating_*, so a count that cannot be represented
// becomes the largest one rather than a wrapped small one.
#pragma once

#include <limits>
#include <optional>
#include <type_traits>

namespace gridrun::base {

// a * b (a + b), or nullopt when the exact product (sum) does not fit in T.
template <class T>
std::optional<T> checked_mul(T a, T b) {
  static_assert(std::is_integral_v<T>, "checked arithmetic is for integers");
  T r{};
  return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<T>(r);
}
template <class T>
std::optional<T> checked_add(T a, T b) {
  static_assert(std::is_integral_v<T>, "checked arithmetic is for integers");
  T r{};
  return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<T>(r);
}

// a * b, or T's largest (smallest, when the exact product is negative) value when it does not fit.
template <class T>
T saturating_mul(T a, T b) {
  if (const auto r = checked_mul(a, b)) return *r;
  if constexpr (std::is_signed_v<T>)
    if ((a < 0) != (b < 0)) return std::numeric_limits<T>::min();
  return std::numeric_limits<T>::max();
}

// a + b, or T's largest (smallest, for two negative terms) value when it does not fit.
template <class T>
T saturating_add(T a, T b) {
  if (const auto r = checked_add(a, b)) return *r;
  if constexpr (std::is_signed_v<T>)
    if (a < 0) return std::numeric_limits<T>::min();
  return std::numeric_limits<T>::max();
}

}  // namespace gridrun::base
