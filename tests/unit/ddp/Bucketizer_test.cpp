// Unit tests for DDP gradient bucket assignment (sim/ddp/bucketizer.*), against hand-traced runs of
// PyTorch's compute_bucket_assignment_by_size (reducer.cpp) and _ddp_init_helper (distributed.py);
// docs/facts.md §1. Every expected plan below is traced by hand in the comment above it.
#include "ddp/bucketizer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "support/builders.hpp"

using ddpsim::config::DdpSettings;
using ddpsim::config::DType;
using ddpsim::config::ParamSpec;
using ddpsim::ddp::assign_by_size;
using ddpsim::ddp::Bucket;
using ddpsim::ddp::kNoLimit;
using ddpsim::ddp::plan_buckets;
using ddpsim::test_support::indices_of;
using ddpsim::test_support::param;
using ddpsim::test_support::synthetic_model;

using Plan = std::vector<std::vector<int>>;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A float32 parameter of `bytes` bytes (bytes must be a multiple of 4).
ParamSpec f32_bytes(double bytes) { return param("p", static_cast<int64_t>(bytes / 4), DType::FLOAT32); }
ParamSpec f16_bytes(double bytes) { return param("h", static_cast<int64_t>(bytes / 2), DType::FLOAT16); }
// A float32 parameter of `mib` MiB.
ParamSpec f32_mib(double mib) { return f32_bytes(mib * kMiB); }
ParamSpec f16_mib(double mib) { return f16_bytes(mib * kMiB); }

std::vector<int> iota(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

DdpSettings ddp_with(bool find_unused, bool static_graph) {
  DdpSettings d;
  d.find_unused_parameters = find_unused;
  d.static_graph = static_graph;
  return d;
}

DdpSettings explicit_cap(double mb, const std::string& version) {
  DdpSettings d;
  d.bucket_cap_mb = mb;
  d.bucket_cap_is_default = false;
  d.pytorch_version = version;
  return d;
}

}  // namespace

// ---------------------------------------------------------------- assign_by_size

TEST(Bucketizer, BucketReachingCapExactlyCloses) {
  // 100-byte tensors, limit 200: 100, 200 >= 200 closes [0,1]; [2,3] likewise; [4] is a leftover.
  // With a strict '>' the first bucket would be [0,1,2].
  std::vector<ParamSpec> ps(5, f32_bytes(100));
  auto b = assign_by_size(ps, iota(5), {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 1}, {2, 3}, {4}}));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_DOUBLE_EQ(b[0].bytes, 200);
  EXPECT_DOUBLE_EQ(b[1].bytes, 200);
  EXPECT_DOUBLE_EQ(b[2].bytes, 100);
}

TEST(Bucketizer, TensorCrossingCapStaysInBucketItCrossed) {
  // 100 < 200; 100 + 152 = 252 >= 200 closes [0,1] at 252 bytes (over the cap by one tensor).
  std::vector<ParamSpec> ps{f32_bytes(100), f32_bytes(152), f32_bytes(52)};
  auto b = assign_by_size(ps, iota(3), {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 1}, {2}}));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[0].bytes, 252);
  EXPECT_DOUBLE_EQ(b[0].size_limit, 200);
  EXPECT_DOUBLE_EQ(b[1].bytes, 52);
}

TEST(Bucketizer, OversizeTensorDoesNotGetItsOwnBucket) {
  // 48 < 200; 48 + 1000 >= 200 closes [0,1]: the 1000-byte tensor shares with the one before it.
  // Then 48, 96: leftover [2,3].
  std::vector<ParamSpec> ps{f32_bytes(48), f32_bytes(1000), f32_bytes(48), f32_bytes(48)};
  auto b = assign_by_size(ps, iota(4), {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 1}, {2, 3}}));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[0].bytes, 1048);
  EXPECT_DOUBLE_EQ(b[1].bytes, 96);
}

TEST(Bucketizer, OversizeTensorAfterAClosedBucketIsAloneOnlyBecauseItCloses) {
  // [0,1] closes at 200; then the 1000-byte tensor alone reaches the cap and closes [2].
  std::vector<ParamSpec> ps{f32_bytes(100), f32_bytes(100), f32_bytes(1000), f32_bytes(100)};
  auto b = assign_by_size(ps, iota(4), {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 1}, {2}, {3}}));
}

TEST(Bucketizer, FirstLimitThenLastLimitRepeats) {
  // Limits [100, 300], 100-byte tensors: [0] closes at 100 and the limit advances to 300;
  // [1,2,3] and [4,5,6] close at 300 (the last limit stays); [7] is a leftover.
  std::vector<ParamSpec> ps(8, f32_bytes(100));
  auto b = assign_by_size(ps, iota(8), {100, 300}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0}, {1, 2, 3}, {4, 5, 6}, {7}}));
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(b[0].size_limit, 100);
  EXPECT_DOUBLE_EQ(b[1].size_limit, 300);
  EXPECT_DOUBLE_EQ(b[2].size_limit, 300);
  EXPECT_DOUBLE_EQ(b[3].size_limit, 300);
}

TEST(Bucketizer, NoLimitGivesOneBucketPerDtype) {
  std::vector<ParamSpec> ps{f32_bytes(400), f32_bytes(800), f32_bytes(4)};
  auto b = assign_by_size(ps, iota(3), {kNoLimit}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 1, 2}}));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].bytes, 1204);
  EXPECT_TRUE(std::isinf(b[0].size_limit));
  // An empty limit list means the same.
  EXPECT_EQ(indices_of(assign_by_size(ps, iota(3), {}, false)), (Plan{{0, 1, 2}}));
}

TEST(Bucketizer, BytesUseElementSizeOfDtype) {
  // 10 elements: float64 80 B, float32 40 B, bfloat16 20 B, int8 10 B; one bucket per dtype.
  std::vector<ParamSpec> ps{param("a", 10, DType::FLOAT64), param("b", 10, DType::FLOAT32),
                            param("c", 10, DType::BFLOAT16), param("d", 10, DType::INT8)};
  auto b = assign_by_size(ps, iota(4), {kNoLimit}, false);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(b[0].bytes, 80);
  EXPECT_EQ(b[0].dtype, DType::FLOAT64);
  EXPECT_DOUBLE_EQ(b[1].bytes, 40);
  EXPECT_DOUBLE_EQ(b[2].bytes, 20);
  EXPECT_EQ(b[2].dtype, DType::BFLOAT16);
  EXPECT_DOUBLE_EQ(b[3].bytes, 10);
}

TEST(Bucketizer, InterleavedDtypesGetSeparateBuckets) {
  // float32 (f) and float16 (h) interleaved, 100 bytes each except p5 (50 B); limit 200.
  // f: p0 100, p2 200 closes [0,2]; h: p1 100, p3 200 closes [1,3]; leftovers in order of first
  // appearance: f [4], then h [5].
  std::vector<ParamSpec> ps{f32_bytes(100), f16_bytes(100), f32_bytes(100),
                            f16_bytes(100), f32_bytes(100), f16_bytes(50)};
  auto b = assign_by_size(ps, iota(6), {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0, 2}, {1, 3}, {4}, {5}}));
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].dtype, DType::FLOAT32);
  EXPECT_EQ(b[1].dtype, DType::FLOAT16);
  EXPECT_EQ(b[2].dtype, DType::FLOAT32);
  EXPECT_EQ(b[3].dtype, DType::FLOAT16);
  EXPECT_DOUBLE_EQ(b[1].bytes, 200);
  EXPECT_DOUBLE_EQ(b[3].bytes, 50);
}

TEST(Bucketizer, EachDtypeAdvancesItsOwnLimit) {
  // Limits [100, 300]. h p0 100 closes [0] (h -> 300). f p1 100 still meets f's first limit: [1]
  // (f -> 300). f p2, p3 200 < 300; h p4 100 < 300; f p5 300 closes [2,3,5]. Leftover h [4].
  std::vector<ParamSpec> ps{f16_bytes(100), f32_bytes(100), f32_bytes(100),
                            f32_bytes(100), f16_bytes(100), f32_bytes(100)};
  auto b = assign_by_size(ps, iota(6), {100, 300}, false);
  EXPECT_EQ(indices_of(b), (Plan{{0}, {1}, {2, 3, 5}, {4}}));
}

TEST(Bucketizer, FirstAssignmentSortsByMinIndex) {
  // f p0 100; h p1 200 closes [1] first; f p2 closes [0,2]. Emitted [[1],[0,2]]; sorted by the
  // smallest index: [[0,2],[1]].
  std::vector<ParamSpec> ps{f32_bytes(100), f16_bytes(200), f32_bytes(100)};
  EXPECT_EQ(indices_of(assign_by_size(ps, iota(3), {200}, false)), (Plan{{1}, {0, 2}}));
  EXPECT_EQ(indices_of(assign_by_size(ps, iota(3), {200}, true)), (Plan{{0, 2}, {1}}));
}

TEST(Bucketizer, OrderDeterminesMembershipAndInBucketOrder) {
  // Visiting order [3, 1, 2, 0], limit 200, 100-byte tensors: [3,1] then [2,0], in visiting order.
  std::vector<ParamSpec> ps(4, f32_bytes(100));
  auto b = assign_by_size(ps, {3, 1, 2, 0}, {200}, false);
  EXPECT_EQ(indices_of(b), (Plan{{3, 1}, {2, 0}}));
}

// ---------------------------------------------------------------- settings

TEST(Bucketizer, BucketCapBytesIsIntOfMebibytes) {
  DdpSettings d;
  EXPECT_DOUBLE_EQ(d.bucket_cap_bytes(), 26214400.0);  // 25 * 1048576
  d.bucket_cap_mb = 1.5;
  EXPECT_DOUBLE_EQ(d.bucket_cap_bytes(), 1572864.0);
  d.bucket_cap_mb = 0.1;  // 104857.6 truncated
  EXPECT_DOUBLE_EQ(d.bucket_cap_bytes(), 104857.0);
  d.bucket_cap_mb = 2.7;  // 2831155.2 truncated
  EXPECT_DOUBLE_EQ(d.bucket_cap_bytes(), 2831155.0);
}

TEST(Bucketizer, FirstBucketCapDependsOnVersionAndExplicitCap) {
  DdpSettings dflt;  // 2.4, default cap
  EXPECT_DOUBLE_EQ(dflt.first_bucket_cap_bytes(), kMiB);
  DdpSettings old_default;
  old_default.pytorch_version = "1.13";
  EXPECT_DOUBLE_EQ(old_default.first_bucket_cap_bytes(), kMiB);
  EXPECT_DOUBLE_EQ(explicit_cap(10, "1.13").first_bucket_cap_bytes(), kMiB);
  EXPECT_DOUBLE_EQ(explicit_cap(10, "2.4").first_bucket_cap_bytes(), 10 * kMiB);
  EXPECT_DOUBLE_EQ(explicit_cap(10, "2.0").first_bucket_cap_bytes(), 10 * kMiB);
  // An explicit cap equal to the default still counts as explicit in recent releases.
  EXPECT_DOUBLE_EQ(explicit_cap(25, "2.4").first_bucket_cap_bytes(), 25 * kMiB);
  EXPECT_FALSE(explicit_cap(10, "1.13").recent_pytorch());
  EXPECT_TRUE(explicit_cap(10, "2.4").recent_pytorch());
}

TEST(Bucketizer, ExplicitFirstBucketCapMb) {
  DdpSettings d;
  d.first_bucket_cap_mb = 4;
  EXPECT_DOUBLE_EQ(d.first_bucket_cap_bytes(), 4 * kMiB);
  d.first_bucket_cap_mb = 0.3;  // int(314572.8)
  EXPECT_DOUBLE_EQ(d.first_bucket_cap_bytes(), 314572.0);

  // Rebuild with [4 MiB, 25 MiB]: six 1 MiB tensors ready 5..0 -> [5,4,3,2] closes at 4 MiB, [1,0].
  std::vector<ParamSpec> ps(6, f32_mib(1));
  DdpSettings e;
  e.first_bucket_cap_mb = 4;
  auto plans = plan_buckets(synthetic_model(ps), e);
  EXPECT_EQ(plans.rebuild_limits, (std::vector<double>{4 * kMiB, 25 * kMiB}));
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{5, 4, 3, 2}, {1, 0}}));
}

// ---------------------------------------------------------------- plan_buckets: iteration 1

TEST(Bucketizer, Iteration1IsOneBucketWithoutFindUnused) {
  // find_unused_parameters=false: limits [unbounded] -> every parameter in one bucket.
  std::vector<ParamSpec> ps(5, f32_mib(8));  // 40 MiB > the 25 MiB cap
  auto plans = plan_buckets(synthetic_model(ps), DdpSettings{});
  ASSERT_EQ(plans.iteration1_limits.size(), 1u);
  EXPECT_TRUE(std::isinf(plans.iteration1_limits[0]));
  EXPECT_EQ(indices_of(plans.iteration1), (Plan{{0, 1, 2, 3, 4}}));
  EXPECT_DOUBLE_EQ(plans.iteration1[0].bytes, 40 * kMiB);
}

TEST(Bucketizer, Iteration1OneBucketPerDtypeSortedThenReversed) {
  // Unbounded: h [0,2] and f [1]; sorted by min index [[0,2],[1]], reversed [[1],[0,2]].
  std::vector<ParamSpec> ps{f16_mib(1), f32_mib(1), f16_mib(1)};
  auto plans = plan_buckets(synthetic_model(ps), DdpSettings{});
  EXPECT_EQ(indices_of(plans.iteration1), (Plan{{1}, {0, 2}}));
  EXPECT_EQ(plans.iteration1[0].dtype, DType::FLOAT32);
  EXPECT_EQ(plans.iteration1[1].dtype, DType::FLOAT16);
}

TEST(Bucketizer, Iteration1WithFindUnusedUsesFirstCapThenCapReversed) {
  // Default cap: limits [1 MiB, 25 MiB] over registration order. Sizes (MiB) 0.5 0.5 10 10 10 3:
  // [0,1] closes at 1 MiB; [2,3,4] at 30 >= 25; [5] is a leftover. Reversed: [[5],[2,3,4],[0,1]].
  std::vector<ParamSpec> ps{f32_mib(0.5), f32_mib(0.5), f32_mib(10), f32_mib(10), f32_mib(10), f32_mib(3)};
  auto plans = plan_buckets(synthetic_model(ps), ddp_with(true, false));
  EXPECT_EQ(plans.iteration1_limits, (std::vector<double>{kMiB, 25 * kMiB}));
  EXPECT_EQ(indices_of(plans.iteration1), (Plan{{5}, {2, 3, 4}, {0, 1}}));
  ASSERT_EQ(plans.iteration1.size(), 3u);
  EXPECT_DOUBLE_EQ(plans.iteration1[0].bytes, 3 * kMiB);
  EXPECT_DOUBLE_EQ(plans.iteration1[1].bytes, 30 * kMiB);
  EXPECT_DOUBLE_EQ(plans.iteration1[2].bytes, kMiB);
  EXPECT_DOUBLE_EQ(plans.iteration1[2].size_limit, kMiB);
  EXPECT_DOUBLE_EQ(plans.iteration1[1].size_limit, 25 * kMiB);
}

TEST(Bucketizer, Iteration1WithFindUnusedSortsByMinIndexBeforeReversing) {
  // Limits [1 MiB, 25 MiB]. f p0 0.5; h p1 1 closes [1]; f p2 closes [0,2]; h p3 1 and f p4 1 stay
  // open: leftovers f [4], h [3]. Emitted [[1],[0,2],[4],[3]]; sorted [[0,2],[1],[3],[4]];
  // reversed [[4],[3],[1],[0,2]].
  std::vector<ParamSpec> ps{f32_mib(0.5), f16_mib(1), f32_mib(0.5), f16_mib(1), f32_mib(1)};
  auto plans = plan_buckets(synthetic_model(ps), ddp_with(true, false));
  EXPECT_EQ(indices_of(plans.iteration1), (Plan{{4}, {3}, {1}, {0, 2}}));
}

TEST(Bucketizer, FindUnusedWithoutStaticGraphNeverRebuilds) {
  std::vector<ParamSpec> ps{f32_mib(0.5), f32_mib(0.5), f32_mib(10), f32_mib(10), f32_mib(10), f32_mib(3)};
  // A ready order that would give a different plan if it were used.
  auto plans = plan_buckets(synthetic_model(ps, std::vector<int>{0, 1, 2, 3, 4, 5}), ddp_with(true, false));
  EXPECT_FALSE(plans.rebuilt);
  EXPECT_EQ(plans.rebuild_iteration, 0);
  EXPECT_TRUE(plans.rebuild_limits.empty());
  EXPECT_EQ(indices_of(plans.steady_state), indices_of(plans.iteration1));
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{5}, {2, 3, 4}, {0, 1}}));
}

// ---------------------------------------------------------------- plan_buckets: rebuild

TEST(Bucketizer, RebuildUsesReadyOrder) {
  // Limits [1 MiB, 25 MiB] over ready order [5,3,4,2,0,1]; sizes (MiB) 0.25 0.25 10 10 10 0.5.
  // p5 0.5 < 1; p3 10.5 >= 1 closes [5,3]; then 10, 20, 20.25, 20.5 < 25: leftover [4,2,0,1].
  std::vector<ParamSpec> ps{f32_mib(0.25), f32_mib(0.25), f32_mib(10), f32_mib(10), f32_mib(10), f32_mib(0.5)};
  auto plans = plan_buckets(synthetic_model(ps, std::vector<int>{5, 3, 4, 2, 0, 1}), DdpSettings{});
  EXPECT_TRUE(plans.rebuilt);
  EXPECT_EQ(plans.rebuild_iteration, 2);
  EXPECT_EQ(plans.rebuild_limits, (std::vector<double>{kMiB, 25 * kMiB}));
  // Not sorted by min index (that would put [4,2,0,1] first) and not reversed.
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{5, 3}, {4, 2, 0, 1}}));
  ASSERT_EQ(plans.steady_state.size(), 2u);
  EXPECT_DOUBLE_EQ(plans.steady_state[0].bytes, 10.5 * kMiB);
  EXPECT_DOUBLE_EQ(plans.steady_state[1].bytes, 20.5 * kMiB);
}

TEST(Bucketizer, RebuildFirstBucketClosesAtExactlyOneMebibyte) {
  // Reverse ready order of eight 1 MiB tensors: [7] reaches 1 MiB exactly and closes; then 25 at a
  // time would need 25 tensors, so [6..0] is a leftover.
  std::vector<ParamSpec> ps(8, f32_mib(1));
  auto plans = plan_buckets(synthetic_model(ps), DdpSettings{});
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{7}, {6, 5, 4, 3, 2, 1, 0}}));
}

TEST(Bucketizer, RebuildIsNotSortedWithMixedDtypes) {
  // Ready [3,2,1,0]. h p3 0.5; f p2 0.5; f p1 1.0 closes [2,1]; h p0 1.5 closes [3,0].
  // Emitted [[2,1],[3,0]]; sorting would give [[3,0],[2,1]].
  std::vector<ParamSpec> ps{f16_mib(1), f32_mib(0.5), f32_mib(0.5), f16_mib(0.5)};
  auto plans = plan_buckets(synthetic_model(ps, std::vector<int>{3, 2, 1, 0}), DdpSettings{});
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{2, 1}, {3, 0}}));
  EXPECT_EQ(plans.steady_state[0].dtype, DType::FLOAT32);
  EXPECT_EQ(plans.steady_state[1].dtype, DType::FLOAT16);
}

TEST(Bucketizer, StaticGraphRebuildsAtIteration3) {
  std::vector<ParamSpec> ps(4, f32_mib(1));
  for (bool find_unused : {false, true}) {
    SCOPED_TRACE(find_unused ? "find_unused_parameters=true" : "find_unused_parameters=false");
    auto plans = plan_buckets(synthetic_model(ps), ddp_with(find_unused, true));
    EXPECT_TRUE(plans.rebuilt);
    EXPECT_EQ(plans.rebuild_iteration, 3);
    // Iteration 1 under static_graph reduces everything at the end of backward: one bucket.
    EXPECT_EQ(indices_of(plans.iteration1), (Plan{{0, 1, 2, 3}}));
    EXPECT_EQ(indices_of(plans.steady_state), (Plan{{3}, {2, 1, 0}}));
  }
}

TEST(Bucketizer, PyTorch113KeepsOneMebibyteFirstCapForExplicitCap) {
  // Cap 10 MiB explicit, eight 2 MiB tensors ready 7..0. 1.13: [7] closes at 2 >= 1 MiB, then
  // [6,5,4,3,2] at 10 MiB, leftover [1,0].
  std::vector<ParamSpec> ps(8, f32_mib(2));
  auto plans = plan_buckets(synthetic_model(ps), explicit_cap(10, "1.13"));
  EXPECT_EQ(plans.rebuild_limits, (std::vector<double>{kMiB, 10 * kMiB}));
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{7}, {6, 5, 4, 3, 2}, {1, 0}}));
}

TEST(Bucketizer, RecentPyTorchUsesExplicitCapAsFirstCap) {
  // Same model, 2.4: the first cap is the 10 MiB cap itself: [7,6,5,4,3], [2,1,0].
  std::vector<ParamSpec> ps(8, f32_mib(2));
  auto plans = plan_buckets(synthetic_model(ps), explicit_cap(10, "2.4"));
  EXPECT_EQ(plans.rebuild_limits, (std::vector<double>{10 * kMiB, 10 * kMiB}));
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{7, 6, 5, 4, 3}, {2, 1, 0}}));
}

TEST(Bucketizer, RecentPyTorchDefaultCapKeepsOneMebibyteFirstCap) {
  // 2.4 with the default cap: [1 MiB, 25 MiB]; 2 MiB tensors: [7], then [6..0] = 14 MiB leftover.
  std::vector<ParamSpec> ps(8, f32_mib(2));
  auto plans = plan_buckets(synthetic_model(ps), DdpSettings{});
  EXPECT_EQ(plans.rebuild_limits, (std::vector<double>{kMiB, 25 * kMiB}));
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{7}, {6, 5, 4, 3, 2, 1, 0}}));
}

TEST(Bucketizer, Iteration1WithFindUnusedFollowsVersionRule) {
  // find_unused, explicit 10 MiB cap, eight 2 MiB tensors in registration order.
  // 1.13: limits [1 MiB, 10 MiB] -> [0], [1..5], [6,7]; reversed [[6,7],[1,2,3,4,5],[0]].
  // 2.4: limits [cap] -> [0..4], [5,6,7]; reversed [[5,6,7],[0,1,2,3,4]].
  std::vector<ParamSpec> ps(8, f32_mib(2));
  DdpSettings old_d = explicit_cap(10, "1.13");
  old_d.find_unused_parameters = true;
  DdpSettings new_d = explicit_cap(10, "2.4");
  new_d.find_unused_parameters = true;
  auto old_p = plan_buckets(synthetic_model(ps), old_d);
  auto new_p = plan_buckets(synthetic_model(ps), new_d);
  EXPECT_EQ(indices_of(old_p.iteration1), (Plan{{6, 7}, {1, 2, 3, 4, 5}, {0}}));
  EXPECT_EQ(indices_of(new_p.iteration1), (Plan{{5, 6, 7}, {0, 1, 2, 3, 4}}));
}

TEST(Bucketizer, FrozenParametersExcluded) {
  // p1 and p3 have requires_grad=false: neither plan mentions them, and bytes exclude them.
  std::vector<ParamSpec> ps{f32_mib(1), f32_mib(1), f32_mib(0.5), f32_mib(1), f32_mib(0.25)};
  ps[1].requires_grad = false;
  ps[3].requires_grad = false;
  auto model = synthetic_model(ps);
  ASSERT_EQ(model.grad_ready_order, (std::vector<int>{4, 2, 0}));
  EXPECT_DOUBLE_EQ(model.grad_bytes(), 1.75 * kMiB);

  auto plans = plan_buckets(model, DdpSettings{});
  EXPECT_EQ(indices_of(plans.iteration1), (Plan{{0, 2, 4}}));
  EXPECT_DOUBLE_EQ(plans.iteration1[0].bytes, 1.75 * kMiB);
  // Rebuild: p4 0.25, p2 0.75, p0 1.75 >= 1 MiB closes [4,2,0].
  EXPECT_EQ(indices_of(plans.steady_state), (Plan{{4, 2, 0}}));

  auto unused = plan_buckets(model, ddp_with(true, false));
  // [1 MiB, 25 MiB] over registration [0,2,4]: p0 1 MiB closes [0]; [2,4] leftover; reversed.
  EXPECT_EQ(indices_of(unused.iteration1), (Plan{{2, 4}, {0}}));
}

TEST(Bucketizer, EveryTrainableParameterInExactlyOneBucket) {
  // A larger mixed model: each plan is a partition of the requires_grad parameters.
  std::vector<ParamSpec> ps;
  for (int i = 0; i < 40; ++i) {
    ParamSpec p = (i % 3 == 0) ? f16_mib(0.1 * (i % 7 + 1)) : f32_mib(0.3 * (i % 5 + 1));
    p.requires_grad = (i % 11 != 5);
    ps.push_back(p);
  }
  auto model = synthetic_model(ps);
  for (auto d : {ddp_with(false, false), ddp_with(true, false), ddp_with(false, true), explicit_cap(2, "2.4")}) {
    auto plans = plan_buckets(model, d);
    for (const auto* plan : {&plans.iteration1, &plans.steady_state}) {
      std::vector<int> seen(ps.size(), 0);
      double bytes = 0;
      for (const Bucket& b : *plan) {
        EXPECT_FALSE(b.param_indices.empty());
        for (int i : b.param_indices) {
          ++seen[static_cast<size_t>(i)];
          EXPECT_EQ(ps[static_cast<size_t>(i)].dtype, b.dtype);
        }
        bytes += b.bytes;
      }
      for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(seen[i], ps[i].requires_grad ? 1 : 0) << "param " << i;
      EXPECT_NEAR(bytes, model.grad_bytes(), 1e-6);
    }
  }
}
