// Bucket assignment: PyTorch DDP's compute_bucket_assignment_by_size on a hand-computed model.
#include "buckets.hpp"

#include <gtest/gtest.h>

#include "model.hpp"

using namespace ddpbench;

namespace {
constexpr uint64_t MiB = 1ULL << 20;

// p0 400 B, p1 1,200,000 B (> 1 MiB), p2 200,000 B, p3 800,000 B, p4 40 B; p5 frozen.
Model small_model() {
  nlohmann::json j = {{"format", "ddpsim-model/1"},
                      {"name", "small"},
                      {"batch_size", 2},
                      {"params",
                       {{{"name", "p0"}, {"shape", {100}}, {"dtype", "float32"}, {"requires_grad", true}},
                        {{"name", "p1"}, {"shape", {1000, 300}}, {"dtype", "float32"}, {"requires_grad", true}},
                        {{"name", "p2"}, {"shape", {50000}}, {"dtype", "float32"}, {"requires_grad", true}},
                        {{"name", "p3"}, {"shape", {200, 1000}}, {"dtype", "float32"}, {"requires_grad", true}},
                        {{"name", "p4"}, {"shape", {10}}, {"dtype", "float32"}, {"requires_grad", true}},
                        {{"name", "p5"}, {"shape", {10}}, {"dtype", "float32"}, {"requires_grad", false}}}},
                      {"layers", {{{"name", "all"}, {"type", "other"}, {"params", {0, 1, 2, 3, 4}}}}},
                      {"grad_ready_order", {4, 3, 2, 1, 0}}};
  return model_from_json(j, "small.json");
}
}  // namespace

TEST(Buckets, DefaultCapUsesOneMiBFirstBucketAndOversizeTensorStaysInCrossedBucket) {
  const auto plan = rebuilt_plan(small_model(), CapSpec{25, true}, -1);
  // 40 + 800000 + 200000 = 1,000,040 < 1 MiB; adding p1 (1.2 MB) crosses it: it stays in bucket 0.
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(plan[0].bytes, 2200040u);
  EXPECT_EQ(plan[0].size_limit, MiB);
  EXPECT_EQ(plan[1].params, (std::vector<int>{0}));  // leftover, under the 25 MiB cap
  EXPECT_EQ(plan[1].bytes, 400u);
  EXPECT_EQ(plan[1].size_limit, 25 * MiB);
}

TEST(Buckets, ExplicitCapIsAlsoTheFirstLimitInRecentPyTorch) {
  EXPECT_EQ(rebuild_limits(CapSpec{0.5, false}, -1), (std::vector<uint64_t>{MiB / 2, MiB / 2}));
  EXPECT_EQ(rebuild_limits(CapSpec{25, true}, -1), (std::vector<uint64_t>{MiB, 25 * MiB}));
  EXPECT_EQ(rebuild_limits(CapSpec{5, false}, 1), (std::vector<uint64_t>{MiB, 5 * MiB}));
  const auto plan = rebuilt_plan(small_model(), CapSpec{0.5, false}, -1);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{4, 3}));  // 800,040 >= 524,288
  EXPECT_EQ(plan[1].params, (std::vector<int>{2, 1}));
  EXPECT_EQ(plan[2].params, (std::vector<int>{0}));
}

TEST(Buckets, ClosesWhenSizeEqualsLimit) {
  std::vector<BucketTensor> t;
  for (int i = 0; i < 5; ++i) t.push_back({i, MiB / 4, "float32"});
  const auto plan = assign_by_size(t, {MiB, 2 * MiB});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{0, 1, 2, 3}));  // exactly 1 MiB: closed (>=)
  EXPECT_EQ(plan[0].bytes, MiB);
  EXPECT_EQ(plan[1].params, (std::vector<int>{4}));
  EXPECT_EQ(plan[1].size_limit, 2 * MiB);
}

TEST(Buckets, TensorLargerThanCapAloneClosesItsOwnBucket) {
  const auto plan = assign_by_size({{0, 3 * MiB, "float32"}, {1, 10, "float32"}, {2, 10, "float32"}}, {MiB, MiB});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{0}));
  EXPECT_EQ(plan[1].params, (std::vector<int>{1, 2}));
}

TEST(Buckets, DtypesHaveSeparateAccumulatorsAndLimits) {
  const auto plan = assign_by_size({{0, 600, "float32"}, {1, 600, "float16"}, {2, 600, "float32"}, {3, 100, "float16"}},
                                   {1000, 5000});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{0, 2}));
  EXPECT_EQ(plan[0].dtype, "float32");
  EXPECT_EQ(plan[1].params, (std::vector<int>{1, 3}));
  EXPECT_EQ(plan[1].dtype, "float16");
}

TEST(Buckets, FrozenParametersAreLeftOut) {
  const auto plan = rebuilt_plan(small_model(), CapSpec{100, false}, -1);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].params, (std::vector<int>{4, 3, 2, 1, 0}));
}

TEST(Buckets, CapBytesMatchesPyTorchConversion) {
  EXPECT_EQ(cap_bytes(25), 25 * MiB);
  EXPECT_EQ(cap_bytes(0.1), 104857u);  // int(0.1 * 1024 * 1024)
}
