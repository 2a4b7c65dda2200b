// The one median and percentile every module uses.
#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ddpsim::core {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Stats, MedianAbsIgnoresSign) {
  EXPECT_DOUBLE_EQ(median_abs({-3, 1, -2}), 2);
  EXPECT_DOUBLE_EQ(median_abs({-4, 1}), 2.5);
  EXPECT_DOUBLE_EQ(median_abs({}), 0);
}

TEST(Stats, PercentileIsNearestRank) {
  const std::vector<double> v{5, 1, 4, 2, 3, 10, 9, 8, 7, 6};  // 1..10 unsorted
  EXPECT_DOUBLE_EQ(percentile(v, 0.50), 5);                    // ceil(5.0) = 5th
  EXPECT_DOUBLE_EQ(percentile(v, 0.95), 10);                   // ceil(9.5) = 10th
  EXPECT_DOUBLE_EQ(percentile(v, 0.91), 10);                   // ceil(9.1) = 10th
  EXPECT_DOUBLE_EQ(percentile(v, 0.90), 9);                    // ceil(9.0) = 9th
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1);                     // clamped to the first
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 10);
  EXPECT_DOUBLE_EQ(percentile({4}, 0.99), 4);
}

TEST(Stats, PercentileOfEmptySampleThrows) {
  try {
    percentile({}, 0.5);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "percentile of an empty sample");
  }
}

// The median's order-statistic interval, coverages by hand: 1 - 2 P(B <= k - 1), B ~ Bin(n, 1/2).
// n = 6: k = 1 covers 1 - 2/64 = 0.96875, k = 2 only 1 - 2 (1 + 6)/64 = 0.78125: [min, max].
// n = 10: k = 2 covers 1 - 2 (1 + 10)/1024 = 0.978515625, k = 3 1 - 2 (1 + 10 + 45)/1024 = 0.890625.
// n = 18: P(B <= 4) = (1 + 18 + 153 + 816 + 3060)/2^18 = 4048/262144: k = 5 covers 0.96911621...;
// k = 6 adds C(18, 5) = 8568: 1 - 2 x 12616/262144 = 0.90374755... < 0.95.
TEST(Stats, MedianIntervalIsTheNarrowestOrderStatisticIntervalOfTheLevel) {
  auto r = median_interval({0.26, 0.21, 0.30, 0.25, 0.24, 0.27});
  EXPECT_DOUBLE_EQ(r.low, 0.21);
  EXPECT_DOUBLE_EQ(r.high, 0.30);
  EXPECT_EQ(r.k, 1u);
  EXPECT_NEAR(r.coverage, 0.96875, 1e-12);
  r = median_interval({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_DOUBLE_EQ(r.low, 2);
  EXPECT_DOUBLE_EQ(r.high, 9);
  EXPECT_NEAR(r.coverage, 0.978515625, 1e-12);
  std::vector<double> v;
  for (int i = 18; i >= 1; --i) v.push_back(i);
  r = median_interval(v);
  EXPECT_EQ(r.k, 5u);
  EXPECT_DOUBLE_EQ(r.low, 5);
  EXPECT_DOUBLE_EQ(r.high, 14);
  EXPECT_NEAR(r.coverage, 1 - 2 * 4048.0 / 262144, 1e-12);
  // At a lower level the narrower k = 6 interval qualifies (0.9037 >= 0.9).
  EXPECT_EQ(median_interval(v, 0.9).k, 6u);
  // Five values never reach 95 %: [min, max] at 1 - 2/32 = 0.9375, said as it is.
  r = median_interval({5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(r.low, 1);
  EXPECT_DOUBLE_EQ(r.high, 5);
  EXPECT_NEAR(r.coverage, 0.9375, 1e-12);
  // Two values: [min, max] at 50 %.
  EXPECT_NEAR(median_interval({2, 1}).coverage, 0.5, 1e-12);
}

TEST(Stats, MedianIntervalOfTooFewValuesOrABadLevelThrows) {
  EXPECT_THROW(median_interval({1.0}), std::invalid_argument);
  EXPECT_THROW(median_interval({1.0, 2.0}, 1.0), std::invalid_argument);
  EXPECT_THROW(median_interval({1.0, 2.0}, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace ddpsim::core
