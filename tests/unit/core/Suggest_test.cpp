// core::edit_distance / closest_names / did_you_mean ("did you mean" in error messages).
#include "core/suggest.hpp"

#include <gtest/gtest.h>

using namespace ddpsim::core;

TEST(Suggest, EditDistanceByHand) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // k->s, e->i, +g (the textbook example)
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
  EXPECT_EQ(edit_distance("defualt", "default"), 1u);    // one adjacent transposition
  EXPECT_EQ(edit_distance("DGX-A100", "dgx-a100"), 0u);  // case-insensitive
}

TEST(Suggest, ClosestNamesWithinAThirdOfTheLength) {
  const std::vector<std::string> names = {"resnet50", "resnet101", "resnet152", "gpt2", "vgg16"};
  EXPECT_EQ(closest_names("resnet5", names), (std::vector<std::string>{"resnet50", "resnet152"}));
  EXPECT_EQ(closest_names("gtp2", names), (std::vector<std::string>{"gpt2"}));
  EXPECT_TRUE(closest_names("zzzzzzzz", names).empty());
  EXPECT_TRUE(closest_names("gpt2", names).empty());  // an exact name is not a suggestion
  // A part of a name counts as close: "llama7b" for "llama-7b".
  EXPECT_EQ(closest_names("llama7b", {"llama-7b", "bert-large"}), (std::vector<std::string>{"llama-7b"}));
}

TEST(Suggest, Message) {
  EXPECT_EQ(did_you_mean("gtp2", {"gpt2", "vgg16"}), "; did you mean \"gpt2\"?");
  EXPECT_EQ(did_you_mean("ab", {"aa", "bb", "cb"}), "; did you mean \"aa\", \"bb\" or \"cb\"?");
  EXPECT_EQ(did_you_mean("zzzzzzzz", {"gpt2"}), "");
}
