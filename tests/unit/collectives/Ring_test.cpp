// Unit tests for the ring all-reduce plan and closed-form time (sim/collectives/ring.*). Expected
// values: phase latency (N - nodes) * intra + (nodes - 1) * inter (NCCL tuning.cc), and
// 2(N-1)/N * S/B + 2 * phase_latency + base (docs/facts.md §5).
#include "collectives/ring.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "config/specs.hpp"

using ddpsim::collectives::build_ring;
using ddpsim::collectives::measured_allreduce_seconds;
using ddpsim::collectives::ring_allreduce_time;
using ddpsim::collectives::ring_allreduce_time_measured;
using ddpsim::collectives::RingPlan;
using ddpsim::config::ClusterSpec;
using ddpsim::config::LinkSpec;

namespace {

constexpr double kIntraBw = 20e9, kIntraLat = 3.4e-6;  // per NVLink
constexpr double kInterBw = 25e9, kInterLat = 14e-6;   // per 200 Gb/s NIC

ClusterSpec cluster(int nodes, int gpus_per_node, int links_per_gpu, int nics_per_node) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_link.name = "nvlink";
  c.intra_link.bandwidth = kIntraBw;
  c.intra_link.latency = kIntraLat;
  c.links_per_gpu = links_per_gpu;
  if (nics_per_node > 0) {
    LinkSpec ib;
    ib.name = "ib";
    ib.bandwidth = kInterBw;
    ib.latency = kInterLat;
    c.inter_link = ib;
    c.nics_per_node = nics_per_node;
  }
  return c;
}

}  // namespace

TEST(Ring, SingleNodeHopsStayInside) {
  const RingPlan r = build_ring(cluster(1, 4, 12, 0));
  EXPECT_EQ(r.nranks, 4);
  ASSERT_EQ(r.hops.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.hops[i].src, i);
    EXPECT_EQ(r.hops[i].dst, (i + 1) % 4);
    EXPECT_FALSE(r.hops[i].inter_node);
    EXPECT_DOUBLE_EQ(r.hops[i].bandwidth, 12 * kIntraBw);
    EXPECT_DOUBLE_EQ(r.hops[i].latency, kIntraLat);
  }
  EXPECT_DOUBLE_EQ(r.bottleneck_bw, 240e9);
  EXPECT_NEAR(r.phase_latency, 3 * kIntraLat, 1e-18);
}

TEST(Ring, TwoNodesCrossTheNetworkTwice) {
  // 2 x 4 ranks, node-major: hops 3->4 and 7->0 are inter-node.
  const RingPlan r = build_ring(cluster(2, 4, 12, 8));
  EXPECT_EQ(r.nranks, 8);
  ASSERT_EQ(r.hops.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const bool inter = (i == 3 || i == 7);
    EXPECT_EQ(r.hops[i].inter_node, inter) << "hop " << i;
    EXPECT_DOUBLE_EQ(r.hops[i].bandwidth, inter ? 8 * kInterBw : 12 * kIntraBw) << "hop " << i;
    EXPECT_DOUBLE_EQ(r.hops[i].latency, inter ? kInterLat : kIntraLat) << "hop " << i;
  }
  EXPECT_EQ(r.hops[7].dst, 0);
  // min(12 * 20e9, 8 * 25e9) = 200e9.
  EXPECT_DOUBLE_EQ(r.bottleneck_bw, 200e9);
  // (8 - 2) intra + (2 - 1) inter.
  EXPECT_NEAR(r.phase_latency, 6 * kIntraLat + 1 * kInterLat, 1e-18);
}

TEST(Ring, BottleneckIsIntraWhenNicsAreFaster) {
  // 2 NVLinks (40e9) vs 8 NICs (200e9): the intra-node hops limit the ring.
  const RingPlan r = build_ring(cluster(2, 4, 2, 8));
  EXPECT_DOUBLE_EQ(r.bottleneck_bw, 40e9);
}

TEST(Ring, SingleNicBottleneck) {
  // One NIC per node: min(240e9, 25e9).
  const RingPlan r = build_ring(cluster(4, 8, 12, 1));
  EXPECT_EQ(r.nranks, 32);
  EXPECT_DOUBLE_EQ(r.bottleneck_bw, 25e9);
  int inter = 0;
  for (const auto& h : r.hops) inter += h.inter_node ? 1 : 0;
  EXPECT_EQ(inter, 4);
  EXPECT_NEAR(r.phase_latency, 28 * kIntraLat + 3 * kInterLat, 1e-18);
}

TEST(Ring, OneGpuPerNodeIsAllNetwork) {
  const RingPlan r = build_ring(cluster(3, 1, 12, 2));
  ASSERT_EQ(r.hops.size(), 3u);
  for (const auto& h : r.hops) EXPECT_TRUE(h.inter_node);
  EXPECT_DOUBLE_EQ(r.bottleneck_bw, 50e9);
  EXPECT_NEAR(r.phase_latency, 2 * kInterLat, 1e-18);
}

TEST(Ring, SingleRankHasNoHops) {
  const RingPlan r = build_ring(cluster(1, 1, 12, 0));
  EXPECT_EQ(r.nranks, 1);
  EXPECT_TRUE(r.hops.empty());
  EXPECT_DOUBLE_EQ(r.phase_latency, 0.0);
}

TEST(Ring, AllReduceClosedFormSingleNode) {
  // N = 8, S = 100 MB, B = 240e9, alpha = 3.4 us, base 8.4 us:
  // 2 * 7/8 * 1e8 / 240e9 + 2 * 7 * 3.4e-6 + 8.4e-6.
  const RingPlan r = build_ring(cluster(1, 8, 12, 0));
  const double bytes = 1e8, base = 8.4e-6;
  const auto t = ring_allreduce_time(r, bytes, base);
  const double transfer_phase = 7.0 / 8.0 * bytes / 240e9;
  EXPECT_NEAR(t.reduce_scatter.transfer, transfer_phase, 1e-15);
  EXPECT_NEAR(t.all_gather.transfer, transfer_phase, 1e-15);
  EXPECT_NEAR(t.reduce_scatter.latency, 7 * kIntraLat, 1e-15);
  EXPECT_NEAR(t.all_gather.latency, 7 * kIntraLat, 1e-15);
  EXPECT_DOUBLE_EQ(t.base_latency, base);
  EXPECT_NEAR(t.total(), 2 * 7.0 / 8.0 * bytes / 240e9 + 2 * 7 * kIntraLat + base, 1e-14);
  EXPECT_NEAR(t.reduce_scatter.total(), transfer_phase + 7 * kIntraLat, 1e-15);
}

TEST(Ring, AllReduceClosedFormTwoNodes) {
  // N = 16 (2 x 8), one NIC per node: B = 25e9; phase latency 14 * 3.4 us + 1 * 14 us.
  const RingPlan r = build_ring(cluster(2, 8, 12, 1));
  const double bytes = 25.0 * 1024 * 1024, base = 8.4e-6;
  const auto t = ring_allreduce_time(r, bytes, base);
  const double expected = 2.0 * 15.0 / 16.0 * bytes / 25e9 + 2 * (14 * kIntraLat + kInterLat) + base;
  EXPECT_NEAR(t.total(), expected, 1e-13);
}

TEST(Ring, AllReduceIsZeroForOneRankOrNoBytes) {
  const auto one = ring_allreduce_time(build_ring(cluster(1, 1, 12, 0)), 1e8, 8.4e-6);
  EXPECT_DOUBLE_EQ(one.total(), 0.0);
  EXPECT_DOUBLE_EQ(one.base_latency, 0.0);
  const auto empty = ring_allreduce_time(build_ring(cluster(1, 8, 12, 0)), 0, 8.4e-6);
  EXPECT_DOUBLE_EQ(empty.total(), 0.0);
}

TEST(Ring, TransferTermIsLinearInBytes) {
  const RingPlan r = build_ring(cluster(2, 4, 12, 8));
  const auto a = ring_allreduce_time(r, 1e6, 0);
  const auto b = ring_allreduce_time(r, 3e6, 0);
  EXPECT_NEAR(b.reduce_scatter.transfer, 3 * a.reduce_scatter.transfer, 1e-18);
  EXPECT_DOUBLE_EQ(b.reduce_scatter.latency, a.reduce_scatter.latency);
}

// A measured table (collective.measured_allreduce): log-log interpolation between the bracketing
// rows, the first row's time below it, the last segment's rate above it. By hand: rows (1 MiB,
// 1 ms), (4 MiB, 2 ms), (16 MiB, 10 ms). At 2 MiB, halfway in log between 1 and 4 MiB: sqrt(1 x 2)
// ms. At 64 MiB: 10 ms + 48 MiB at (10 - 2) ms / 12 MiB = 42 ms.
TEST(RingMeasured, InterpolatesLogLogFloorsBelowAndExtendsAtTheLastRate) {
  const double MiB = 1024.0 * 1024.0;
  const std::vector<std::pair<double, double>> t = {{MiB, 1e-3}, {4 * MiB, 2e-3}, {16 * MiB, 10e-3}};
  EXPECT_DOUBLE_EQ(measured_allreduce_seconds(t, MiB), 1e-3);
  EXPECT_DOUBLE_EQ(measured_allreduce_seconds(t, 4 * MiB), 2e-3);
  EXPECT_NEAR(measured_allreduce_seconds(t, 2 * MiB), std::sqrt(2.0) * 1e-3, 1e-15);
  EXPECT_DOUBLE_EQ(measured_allreduce_seconds(t, 1024), 1e-3);
  EXPECT_NEAR(measured_allreduce_seconds(t, 64 * MiB), 42e-3, 1e-15);
  EXPECT_EQ(measured_allreduce_seconds(t, 0), 0.0);
  // A last segment that falls (noise): proportional to the last row instead.
  const std::vector<std::pair<double, double>> fall = {{MiB, 3e-3}, {2 * MiB, 2e-3}};
  EXPECT_DOUBLE_EQ(measured_allreduce_seconds(fall, 4 * MiB), 4e-3);
}

// The ring's latency terms stay its latency part; the table's remainder is transfer, half a phase.
// 2 ranks on one node: phase latency 1 x 3.4 us; base 10 us; table time at 4 MiB 2 ms.
TEST(RingMeasured, KeepsTheRingsLatencyAndMakesTheRestTransfer) {
  const double MiB = 1024.0 * 1024.0;
  const RingPlan r = build_ring(cluster(1, 2, 1, 0));
  const std::vector<std::pair<double, double>> t = {{MiB, 1e-3}, {4 * MiB, 2e-3}};
  const auto m = ring_allreduce_time_measured(r, 4 * MiB, 10e-6, t);
  EXPECT_DOUBLE_EQ(m.base_latency, 10e-6);
  EXPECT_DOUBLE_EQ(m.reduce_scatter.latency, kIntraLat);
  EXPECT_DOUBLE_EQ(m.all_gather.latency, kIntraLat);
  EXPECT_NEAR(m.reduce_scatter.transfer, (2e-3 - 10e-6 - 2 * kIntraLat) / 2, 1e-15);
  EXPECT_NEAR(m.base_latency + m.reduce_scatter.total() + m.all_gather.total(), 2e-3, 1e-15);
  // A table time below the ring's own latency (16.8 us): the latency is scaled to it, no transfer.
  const std::vector<std::pair<double, double>> fast = {{MiB, 8.4e-6}, {4 * MiB, 9e-6}};
  const auto f = ring_allreduce_time_measured(r, MiB, 10e-6, fast);
  EXPECT_DOUBLE_EQ(f.reduce_scatter.transfer, 0.0);
  EXPECT_NEAR(f.base_latency + f.reduce_scatter.total() + f.all_gather.total(), 8.4e-6, 1e-18);
  EXPECT_NEAR(f.base_latency, 10e-6 * 8.4e-6 / (10e-6 + 2 * kIntraLat), 1e-18);
}
