// Unit tests of base/checked.hpp: the checked and saturating arithmetic behind every count a grid
// derives (issue 45: products that wrapped planned a global batch of 32 and a job of 0 cores).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "gridrun/base/checked.hpp"

using namespace gridrun::base;

namespace {
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
}  // namespace

TEST(Checked, MultiplyFitsOrSaysItDoesNot) {
  EXPECT_EQ(checked_mul<std::int64_t>(32, 4), 128);
  EXPECT_EQ(checked_mul<std::int64_t>(kMax, 1), kMax);
  EXPECT_EQ(checked_mul<std::int64_t>(-1, kMax), -kMax);
  EXPECT_FALSE(checked_mul<std::int64_t>(4611686018427387912, 4));    // wrapped to 32 before
  EXPECT_FALSE(checked_mul<std::int64_t>(std::int64_t{1} << 62, 4));  // wrapped to 0 before
  EXPECT_FALSE(checked_mul<std::int64_t>(kMin, -1));
  EXPECT_FALSE(checked_mul<int>(65536, 65536));
  EXPECT_EQ(checked_mul<int>(46340, 46340), 2147395600);
}

TEST(Checked, AddFitsOrSaysItDoesNot) {
  EXPECT_EQ(checked_add<std::int64_t>(kMax - 1, 1), kMax);
  EXPECT_FALSE(checked_add<std::int64_t>(kMax, 1));
  EXPECT_FALSE(checked_add<std::int64_t>(kMin, -1));
  EXPECT_EQ(checked_add<std::uint64_t>(1, 2), 3u);
  EXPECT_FALSE(checked_add<std::uint64_t>(std::numeric_limits<std::uint64_t>::max(), 1));
}

TEST(Checked, SaturatingStopsAtTheEnds) {
  EXPECT_EQ(saturating_mul<std::int64_t>(4611686018427387912, 4), kMax);
  EXPECT_EQ(saturating_mul<std::int64_t>(-4611686018427387912, 4), kMin);
  EXPECT_EQ(saturating_mul<std::int64_t>(-4611686018427387912, -4), kMax);
  EXPECT_EQ(saturating_mul<std::int64_t>(6, 7), 42);
  EXPECT_EQ(saturating_add<std::int64_t>(kMax, kMax), kMax);
  EXPECT_EQ(saturating_add<std::int64_t>(kMin, -5), kMin);
  EXPECT_EQ(saturating_mul<std::uint32_t>(65536, 65536), std::numeric_limits<std::uint32_t>::max());
}
