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

}  // namespace
}  // namespace ddpsim::core
