// Sampled values (see sample.hpp): splitmix64 bits mapped onto uniform, log-uniform, integer and
// choice distributions with arithmetic whose result the C++ standard fixes.
#include "sample.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "gridrun/base/splitmix.hpp"

namespace gridrun::jobs::detail {

namespace {

// splitmix64 (base/splitmix.hpp): a fixed sequence for a given state on every platform.
std::uint64_t next_bits(std::uint64_t& state) { return base::splitmix64_next(state); }

// A stream per (seed, parameter): FNV-1a of the name mixed into the seed's first output.
std::uint64_t stream_state(std::uint64_t seed, const std::string& param) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : param) h = (h ^ c) * 1099511628211ULL;
  std::uint64_t s = seed;
  return next_bits(s) ^ h;
}

// [0, 1) from the top 53 bits: every value a multiple of 2^-53, exactly representable.
double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// The high 64 bits of a * b, in 32-bit halves (no __int128, which -Wpedantic refuses): an
// unbiased-enough index into [0, span) for span far below 2^64 (Lemire's multiply-shift).
std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32, b_lo = b & 0xffffffffULL, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (cross >> 32);
}

Value draw(const Distribution& d, std::uint64_t bits) {
  const double u = unit(bits);
  switch (d.kind) {
    case Dist::Uniform: {
      const double x = round_significant(d.low + u * (d.high - d.low), 4);
      return std::clamp(x, d.low, d.high);
    }
    case Dist::LogUniform: {
      const double lo = std::log(d.low), hi = std::log(d.high);
      return std::clamp(round_significant(std::exp(lo + u * (hi - lo)), 4), d.low, d.high);
    }
    case Dist::RandInt: {
      // Unsigned arithmetic wraps where the signed would overflow; a span of 0 is all 2^64 values.
      const auto low = static_cast<std::uint64_t>(d.int_low);
      const std::uint64_t span = static_cast<std::uint64_t>(d.int_high) - low + 1;
      return static_cast<std::int64_t>(low + (span == 0 ? bits : mul_high(bits, span)));
    }
    case Dist::LogRandInt: {
      // Optuna's rule: log-uniform over [low - 0.5, high + 0.5], rounded, so that both ends are
      // as likely as their log-width says.
      const double lo = std::log(static_cast<double>(d.int_low) - 0.5);
      const double hi = std::log(static_cast<double>(d.int_high) + 0.5);
      const double x = std::floor(std::exp(lo + u * (hi - lo)) + 0.5);
      if (!(x < 0x1.0p63)) return d.int_high;  // 2^63 itself is no int64
      return std::clamp(static_cast<std::int64_t>(x), d.int_low, d.int_high);
    }
    case Dist::Choice: return d.choices[mul_high(bits, d.choices.size())];
  }
  return Value{};
}

}  // namespace

const std::vector<std::string>& dist_names() {
  static const std::vector<std::string> names = {"uniform", "loguniform", "randint", "lograndint", "choice"};
  return names;
}

double round_significant(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, digits - 1).ptr;
  double y = x;
  std::from_chars(buf, end, y);
  return y;
}

std::vector<Value> draw_values(const Distribution& d, std::uint64_t seed, const std::string& param,
                               std::size_t n) {
  std::uint64_t state = stream_state(seed, param);
  std::vector<Value> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(draw(d, next_bits(state)));
  return out;
}

}  // namespace gridrun::jobs::detail
