#include "core/text.hpp"

#include <gtest/gtest.h>

namespace ddpsim::core {
namespace {

using V = std::vector<std::string>;

TEST(Text, SplitListKeepsEveryItem) {
  EXPECT_EQ(split_list("Ring,Tree"), (V{"Ring", "Tree"}));
  EXPECT_EQ(split_list("a,,b,"), (V{"a", "", "b", ""}));
  EXPECT_EQ(split_list("one"), (V{"one"}));
  EXPECT_EQ(split_list(""), V{});
  EXPECT_EQ(split_list("a:b", ':'), (V{"a", "b"}));
}

TEST(Text, ToLower) { EXPECT_EQ(to_lower("NVLSTree LL128"), "nvlstree ll128"); }

TEST(Text, Percent1RoundsToOneDecimalAndNeverPrintsMinusZero) {
  EXPECT_EQ(percent1_text(0.1234), "12.3%");
  EXPECT_EQ(percent1_text(1.0), "100.0%");
  EXPECT_EQ(percent1_text(-0.0004), "0.0%");  // -0.04 %: would print "-0.0%"
  EXPECT_EQ(percent1_text(-0.0006), "-0.1%");
  EXPECT_EQ(percent1_text(0.0), "0.0%");
}

}  // namespace
}  // namespace ddpsim::core
