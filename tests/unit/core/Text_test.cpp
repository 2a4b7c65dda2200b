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

}  // namespace
}  // namespace ddpsim::core
