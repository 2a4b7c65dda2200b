// ddp::Reducer, one test per rule of docs/facts.md §1 it implements (no SimGrid).
#include "ddp/reducer.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace ddpsim::ddp {
namespace {

// Buckets over parameters 0..n-1: {0,1}, {2}, {3,4,5}.
std::vector<Bucket> three_buckets() {
  std::vector<Bucket> b(3);
  b[0].param_indices = {0, 1};
  b[1].param_indices = {2};
  b[2].param_indices = {3, 4, 5};
  return b;
}

TEST(Reducer, BucketReadyWhenItsLastGradientArrives) {
  auto b = three_buckets();
  Reducer r(b, 6, {});
  auto x = r.mark_ready(1);
  EXPECT_EQ(x.ready_bucket, -1);
  EXPECT_TRUE(x.launched.empty());
  x = r.mark_ready(0);
  EXPECT_EQ(x.ready_bucket, 0);
  EXPECT_EQ(x.launched, std::vector<int>({0}));
}

TEST(Reducer, ReadyBucketWaitsForLowerIndicesThenConsecutiveOnesLaunchTogether) {
  auto b = three_buckets();
  Reducer r(b, 6, {});
  // Bucket 2 completes first: it must wait for 0 and 1 (strictly in-order launch).
  for (int p : {3, 4, 5}) r.mark_ready(p);
  EXPECT_EQ(r.next_to_launch(), 0u);
  auto x = r.mark_ready(2);  // bucket 1 ready, still waiting for bucket 0
  EXPECT_EQ(x.ready_bucket, 1);
  EXPECT_TRUE(x.launched.empty());
  r.mark_ready(0);
  x = r.mark_ready(1);  // bucket 0 ready: 0, 1 and 2 launch together, in index order
  EXPECT_EQ(x.ready_bucket, 0);
  EXPECT_EQ(x.launched, std::vector<int>({0, 1, 2}));
  EXPECT_TRUE(r.all_launched());
}

TEST(Reducer, UsedMapAllReduceFollowsTheLastBucketWithFindUnusedParameters) {
  auto b = three_buckets();
  Reducer r(b, 6, {true, true, false});
  for (int p : {0, 1, 2}) EXPECT_FALSE(r.mark_ready(p).launch_used_map);
  r.mark_ready(3);
  r.mark_ready(4);
  EXPECT_TRUE(r.mark_ready(5).launch_used_map);
  EXPECT_EQ(r.finalize_waits(), 4u);                   // three buckets and the used map
  EXPECT_DOUBLE_EQ(Reducer::used_map_bytes(6), 24.0);  // one int32 per parameter
  Reducer plain(b, 6, {});
  for (int p = 0; p < 6; ++p) EXPECT_FALSE(plain.mark_ready(p).launch_used_map);
  EXPECT_EQ(plain.finalize_waits(), 3u);
}

TEST(Reducer, FinalizeCopiesOutUnlessGradientAsBucketView) {
  auto b = three_buckets();
  EXPECT_TRUE(Reducer(b, 6, {true, false, false}).copies_out());
  EXPECT_FALSE(Reducer(b, 6, {true, false, true}).copies_out());
}

TEST(Reducer, NoSyncHooksDoNothing) {
  auto b = three_buckets();
  Reducer r(b, 6, {false, false, false});
  EXPECT_FALSE(r.hooks_active());
  EXPECT_FALSE(r.copies_out());
  for (int p = 0; p < 6; ++p) {
    auto x = r.mark_ready(p);
    EXPECT_EQ(x.ready_bucket, -1);
    EXPECT_TRUE(x.launched.empty());
  }
  EXPECT_EQ(r.next_to_launch(), 0u);
}

TEST(Reducer, ParameterInNoBucketLaunchesNothing) {
  std::vector<Bucket> b(1);
  b[0].param_indices = {1};
  Reducer r(b, 3, {});
  EXPECT_EQ(r.bucket_of(0), -1);
  EXPECT_TRUE(r.mark_ready(0).launched.empty());
  EXPECT_EQ(r.mark_ready(1).launched, std::vector<int>({0}));
}

TEST(Reducer, GradientMarkedTwiceIsAnError) {
  std::vector<Bucket> b(1);
  b[0].param_indices = {0};
  Reducer r(b, 1, {});
  r.mark_ready(0);
  try {
    r.mark_ready(0);
    FAIL() << "no error";
  } catch (const core::SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("marked ready twice"), std::string::npos) << e.what();
  }
}

TEST(Reducer, ForwardBroadcastsBuffersOnlyWithBroadcastBuffers) {
  config::ModelSpec m;
  config::BufferSpec running_mean;
  running_mean.numel = 10;
  running_mean.dtype = config::DType::FLOAT32;
  config::BufferSpec count;
  count.numel = 1;
  count.dtype = config::DType::INT64;
  m.buffers = {running_mean, count};
  config::DdpSettings ddp;
  // 10 x 4 B of float32 and 8 B of int64: one broadcast per dtype.
  EXPECT_EQ(Reducer::forward_broadcasts(m, ddp), (std::vector<double>{40.0, 8.0}));
  ddp.broadcast_buffers = false;
  EXPECT_TRUE(Reducer::forward_broadcasts(m, ddp).empty());
}

// broadcast_coalesced (c10d comm.cpp) buckets with compute_bucket_assignment_by_size: one bucket
// per dtype, closed once it reaches 250 MiB, sorted by first tensor. BatchNorm's buffers: float32
// running_mean / running_var and an int64 num_batches_tracked, so two broadcasts.
TEST(Reducer, ForwardBroadcastsOneBucketPerDtypeClosedAt250MiB) {
  auto buf = [](int64_t numel, config::DType d) {
    config::BufferSpec b;
    b.numel = numel;
    b.dtype = d;
    return b;
  };
  config::ModelSpec m;
  m.buffers = {buf(64, config::DType::FLOAT32), buf(64, config::DType::FLOAT32), buf(1, config::DType::INT64),
               buf(128, config::DType::FLOAT32), buf(1, config::DType::INT64)};
  config::DdpSettings ddp;
  EXPECT_EQ(Reducer::forward_broadcasts(m, ddp), (std::vector<double>{4 * 256.0, 16.0}));
  // 100 Mi floats (400 MiB) then 30 Mi floats: the first closes a bucket alone at >= 250 MiB.
  const double MiB = 1024.0 * 1024.0;
  m.buffers = {buf(int64_t{100} << 20, config::DType::FLOAT32), buf(int64_t{30} << 20, config::DType::FLOAT32)};
  EXPECT_EQ(Reducer::forward_broadcasts(m, ddp), (std::vector<double>{400 * MiB, 120 * MiB}));
  ddp.broadcast_buffers = false;
  EXPECT_TRUE(Reducer::forward_broadcasts(m, ddp).empty());
}

}  // namespace
}  // namespace ddpsim::ddp
