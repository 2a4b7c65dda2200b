// aws-ofi-nccl inside NCCL (sim/collectives/net_plugin.hpp): the region tuner's geometry and
// picks, the rails grouped into one NCCL device, the reported latency (NCCL's pick only), AWS's
// EFA step (achieved time) and the NCCL settings the plugin forces. Expected values are worked
// out by hand from the plugin's source (aws/aws-ofi-nccl 2daf7d30), not taken from the code.
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/nccl_model.hpp"
#include "collectives/net_plugin.hpp"

using namespace ddpsim::collectives;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// 8 x H100 per node on NVSwitch (18 NVLink4 = 18 x 20.6 GB/s NCCL-effective as in dgx-h100).
NcclTopology h100_nodes(int nodes, int nics, double nic_bw, NetPlugin plugin) {
  NcclTopology t;
  t.nranks = 8 * nodes;
  t.nnodes = nodes;
  t.arch = Arch::HOPPER;
  t.sm_count = 132;
  t.intra_bw = 18 * 20.6e9;
  t.nvswitch = true;
  t.nvls = true;
  t.nic_bw = nic_bw;
  t.nics_per_node = nics;
  t.net_plugin = plugin;
  return t;
}

bool all_enabled(Algo, Proto) { return true; }

const AllReduceEstimate& candidate(const std::vector<AllReduceEstimate>& c, Algo a, Proto p) {
  for (const auto& e : c)
    if (e.algo == a && e.proto == p) return e;
  ADD_FAILURE() << "no candidate " << to_string(a) << "/" << to_string(p);
  return c.front();
}

}  // namespace

TEST(NcclNetPlugin, ParsesTheFourPlatformsAndRefusesOthers) {
  EXPECT_EQ(parse_net_plugin(""), NetPlugin::NONE);
  EXPECT_EQ(net_plugin_names().size(), 4u);
  for (const std::string& n : net_plugin_names()) EXPECT_EQ(to_string(parse_net_plugin(n)), n);
  EXPECT_THROW(parse_net_plugin("aws-ofi-nccl/p6-b300"), std::invalid_argument);
  EXPECT_THROW(parse_net_plugin("aws-ofi-nccl/p6e"), std::invalid_argument);
  // platform-aws.cpp: latency 75 us (p4d, p5/p5e), 35 us (p5en); RDMA on p5/p5en, send/recv on p4d.
  EXPECT_DOUBLE_EQ(aws_ofi_platform(NetPlugin::AWS_OFI_P4D)->reported_latency_s, 75e-6);
  EXPECT_DOUBLE_EQ(aws_ofi_platform(NetPlugin::AWS_OFI_P5EN)->reported_latency_s, 35e-6);
  EXPECT_FALSE(aws_ofi_platform(NetPlugin::AWS_OFI_P4D)->rdma);
  EXPECT_TRUE(aws_ofi_platform(NetPlugin::AWS_OFI_P5)->rdma);
  EXPECT_EQ(aws_ofi_platform(NetPlugin::NONE), nullptr);
}

TEST(NcclNetPlugin, ExtendRegionAsTheSourceDoes) {
  const TunerPoint z{100.0 * kGiB, 1024.0 * 1024};
  // a and b on one vertical line: (a.x, z.y).
  const TunerPoint v = aws_ofi_extend_region({402653184, 2048}, {402653184, 4096}, z);
  EXPECT_NEAR(v.x, 402653184, 1e-3);
  EXPECT_NEAR(v.y, 1048576, 1e-6);
  // (7.5 GiB, 160) -> (9 GiB, 192): both coordinates grow by 1.2, slope 1 in log2-log2, so the
  // line through them reaches x = 100 GiB at 160 x 100 / 7.5 = 2133.33 ranks (< z.y): (z.x, 2133.33).
  const TunerPoint s = aws_ofi_extend_region({8053063680, 160}, {9663676416, 192}, z);
  EXPECT_NEAR(s.x, 100.0 * kGiB, 1.0);
  EXPECT_NEAR(s.y, 160.0 * 100 / 7.5, 1e-6);
}

TEST(NcclNetPlugin, PointInRegionInsideOutsideAndOnTheEdge) {
  // The square [1, 4] x [1, 4] (in log2: [0, 2] x [0, 2]).
  const std::vector<TunerPoint> sq = {{1, 1}, {4, 1}, {4, 4}, {1, 4}};
  EXPECT_EQ(aws_ofi_inside_region({2, 2}, sq), 1);
  EXPECT_EQ(aws_ofi_inside_region({8, 2}, sq), -1);
  EXPECT_EQ(aws_ofi_inside_region({2, 0.5}, sq), -1);
  EXPECT_EQ(aws_ofi_inside_region({4, 2}, sq), 0);  // on the right edge: is_inside_region says 0
}

TEST(NcclNetPlugin, P5RegionTunerPicks) {
  const auto pick = [](int nodes, double bytes) {
    return aws_ofi_region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 8 * nodes, nodes, 0, bytes, all_enabled);
  };
  // Tree LL128's right edge runs (30 MiB, 16) -> (36 MiB, 32) -> (112 MiB, 64) -> (288 MiB, 128)
  // -> (288 MiB, 256): at 32 ranks it ends at 36 MiB, at 256 ranks at 288 MiB.
  ASSERT_TRUE(pick(4, 32 * kMiB));
  EXPECT_EQ(pick(4, 32 * kMiB)->algo, Algo::TREE);
  EXPECT_EQ(pick(4, 32 * kMiB)->proto, Proto::LL128);
  EXPECT_EQ(pick(32, 256 * kMiB)->algo, Algo::TREE);
  EXPECT_EQ(pick(32, 8)->algo, Algo::TREE);  // the region starts at 0 bytes
  // 4 nodes, 64 MiB: right of Tree LL128, inside Ring LL128 (its left edge at 32 ranks is 36 MiB,
  // its right edge (1 GiB, 17) -> (2 GiB, 64) crosses 32 ranks at 2^30.48 B).
  EXPECT_EQ(pick(4, 64 * kMiB)->algo, Algo::RING);
  EXPECT_EQ(pick(4, 64 * kMiB)->proto, Proto::LL128);
  EXPECT_EQ(pick(4, 1.25 * kGiB)->algo, Algo::RING);
  EXPECT_EQ(pick(4, 1.25 * kGiB)->proto, Proto::LL128);
  // "Skip when two nodes or lesser"; other functions and other ranks per node: NCCL's own pick.
  EXPECT_FALSE(pick(2, 32 * kMiB));
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_GATHER, 32, 4, 0, 32 * kMiB, all_enabled));
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 16, 4, 0, 32 * kMiB, all_enabled));
  // Before NCCL 2.21.5 there is no tuner plugin interface.
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 32, 4, 21903, 32 * kMiB, all_enabled));
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P4D, Func::ALL_REDUCE, 32, 4, 0, 32 * kMiB, all_enabled));
  // A disabled (algorithm, protocol) (NCCL_ALGO_PROTO_IGNORE) is skipped: at (32 MiB, 32 ranks)
  // only Tree LL128 contains the point, so nothing is forced.
  const auto no_tree = [](Algo a, Proto) { return a != Algo::TREE; };
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 32, 4, 0, 32 * kMiB, no_tree));
}

TEST(NcclNetPlugin, P5enRegionTunerPicks) {
  const auto pick = [](int nodes, double bytes) {
    return aws_ofi_region_pick(NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 8 * nodes, nodes, 0, bytes, all_enabled);
  };
  // Tree LL up to 192 KiB (vertical edge at 196608 B from 16 to 1024 ranks).
  EXPECT_EQ(pick(4, 64 * 1024)->proto, Proto::LL);
  EXPECT_EQ(pick(4, 64 * 1024)->algo, Algo::TREE);
  // Tree LL128 from 192 KiB; at 32 ranks its edge (12.5 MiB, 16) -> (123.5 MiB, 127) is at
  // 2^(23.64 + (5 - 4) x (26.95 - 23.64) / (6.99 - 4)) = 2^24.75 B = 28.2 MiB.
  EXPECT_EQ(pick(4, 1 * kMiB)->proto, Proto::LL128);
  EXPECT_EQ(pick(4, 1 * kMiB)->algo, Algo::TREE);
  EXPECT_EQ(pick(4, 64 * kMiB)->algo, Algo::RING);  // Ring LL128 beyond
  EXPECT_EQ(pick(4, 64 * kMiB)->proto, Proto::LL128);
}

TEST(NcclNetPlugin, RdmaRailsAreOneNcclDevicePerGpu) {
  // p5: 32 x 100 Gb/s EFA; NCCL sees 8 devices of 4 rails (400 Gb/s), as if the node had 8 NICs.
  const NcclTuning grouped = tune_model(h100_nodes(4, 32, 12.5e9, NetPlugin::AWS_OFI_P5));
  const NcclTuning eight = tune_model(h100_nodes(4, 8, 50e9, NetPlugin::NONE));
  const NcclTuning raw = tune_model(h100_nodes(4, 32, 12.5e9, NetPlugin::NONE));
  EXPECT_EQ(grouped.ring.nchannels, eight.ring.nchannels);
  EXPECT_DOUBLE_EQ(grouped.ring.bw_inter, eight.ring.bw_inter);
  EXPECT_DOUBLE_EQ(grouped.tree.bw_inter, eight.tree.bw_inter);
  EXPECT_NE(raw.ring.bw_inter, eight.ring.bw_inter);  // without the plugin: 100 Gb/s channels
  // p4d's send/recv protocol does not group (4 NICs for 8 GPUs anyway).
  const NcclTuning p4d = tune_model(h100_nodes(4, 32, 12.5e9, NetPlugin::AWS_OFI_P4D));
  EXPECT_DOUBLE_EQ(p4d.ring.bw_inter, raw.ring.bw_inter);
}

TEST(NcclNetPlugin, ForcedBuffsizeUnlessTheUserSetsOne) {
  EXPECT_DOUBLE_EQ(tune_model(h100_nodes(2, 8, 50e9, NetPlugin::AWS_OFI_P5)).simple_buffsize, 8 * kMiB);
  EXPECT_DOUBLE_EQ(tune_model(h100_nodes(2, 8, 50e9, NetPlugin::NONE)).simple_buffsize, 4 * kMiB);
  NcclSettings s;
  s.buffsize = 2 * kMiB;
  EXPECT_DOUBLE_EQ(tune_model(h100_nodes(2, 8, 50e9, NetPlugin::AWS_OFI_P5), s).simple_buffsize, 2 * kMiB);
}

TEST(NcclNetPlugin, ReportedLatencyMovesNcclsEstimateOnly) {
  // p4d (no plugin model): the 75 us reach NCCL's latencyInter (twice for Simple) and nothing else.
  // 2 nodes: Tree has 2 log2(2) = 2 inter hops, the ring 2 (nNodes - 1) = 2.
  NcclTopology plain = h100_nodes(2, 8, 50e9, NetPlugin::NONE);
  NcclTopology p4d = plain;
  p4d.net_plugin = NetPlugin::AWS_OFI_P4D;
  const auto a = allreduce_candidates(plain, 8);
  const auto b = allreduce_candidates(p4d, 8);
  for (Algo algo : {Algo::TREE, Algo::RING}) {
    const auto& x = candidate(a, algo, Proto::LL);
    const auto& y = candidate(b, algo, Proto::LL);
    EXPECT_NEAR(y.nccl_model_time - x.nccl_model_time, 2 * 75e-6, 1e-9) << to_string(algo);
    EXPECT_NEAR(y.time, x.time, 1e-12) << to_string(algo);
    EXPECT_NEAR(y.why.net_step_latency, -2 * 75e-6, 1e-9);
    const auto& xs = candidate(a, algo, Proto::LL128);
    const auto& ys = candidate(b, algo, Proto::LL128);
    EXPECT_NEAR(ys.nccl_model_time - xs.nccl_model_time, 2 * 75e-6, 1e-9);
  }
  // NCCL reads the plugin's latency from 2.12 on (search.cc latencyInter): 2.11.4 ignores it.
  NcclTopology old_plain = plain, old_p4d = p4d;
  old_plain.nccl_version = old_p4d.nccl_version = 21104;
  EXPECT_NEAR(predict_allreduce(old_p4d, 8).nccl_model_time, predict_allreduce(old_plain, 8).nccl_model_time, 1e-12);
  // Simple: latencyInter twice per hop (tuning.cc "Also add the flush extra latency"). Tree Simple
  // on 2 nodes: 2 hops x 2 x 75 us.
  EXPECT_NEAR(
      candidate(b, Algo::TREE, Proto::SIMPLE).nccl_model_time - candidate(a, Algo::TREE, Proto::SIMPLE).nccl_model_time,
      4 * 75e-6, 1e-9);
}

TEST(NcclNetPlugin, EfaStepIsAwsFigureInTheAchievedTime) {
  // p5 (AWS's model: 20 us per inter-node step, + 3 us for Simple) against NCCL's NET hwLat (Tree
  // LL 5 us) on the same 8 x 400 Gb/s devices. 4 nodes, 8 B: Tree LL achieved latency grows by
  // 2 log2(4) x (20 - 5) = 60 us; NCCL's estimate by 2 log2(4) x 75 us (the reported latency).
  const NcclTopology plain = h100_nodes(4, 8, 50e9, NetPlugin::NONE);
  NcclTopology p5 = plain;
  p5.net_plugin = NetPlugin::AWS_OFI_P5;
  const auto a = allreduce_candidates(plain, 8);
  const auto b = allreduce_candidates(p5, 8);
  const auto& x = candidate(a, Algo::TREE, Proto::LL);
  const auto& y = candidate(b, Algo::TREE, Proto::LL);
  EXPECT_NEAR(y.time - x.time, 60e-6, 1e-8);
  EXPECT_NEAR(y.nccl_model_time - x.nccl_model_time, 300e-6, 1e-8);
  EXPECT_NE(explain_difference(y).find("net plugin latency"), std::string::npos);
  // Tree Simple: 2 log2(4) x (20 + 3 - 14) = 36 us more.
  EXPECT_NEAR(candidate(b, Algo::TREE, Proto::SIMPLE).time - candidate(a, Algo::TREE, Proto::SIMPLE).time, 36e-6, 1e-8);
}

TEST(NcclNetPlugin, RegionPickIsNcclsPickAndSaysSo) {
  // 4 p5 nodes, 32 MiB: the region tuner forces Tree LL128 (above), whatever NCCL estimates.
  const NcclTopology p5 = h100_nodes(4, 32, 12.5e9, NetPlugin::AWS_OFI_P5);
  const auto e = predict_allreduce(p5, 32 * kMiB);
  EXPECT_EQ(e.algo, Algo::TREE);
  EXPECT_EQ(e.proto, Proto::LL128);
  EXPECT_TRUE(e.why.plugin_pick);
  // On 2 nodes the plugin leaves NCCL's pick (the minimum of NCCL's estimates).
  const auto c2 = allreduce_candidates(h100_nodes(2, 32, 12.5e9, NetPlugin::AWS_OFI_P5), 32 * kMiB);
  EXPECT_FALSE(c2.front().why.plugin_pick);
  for (const auto& x : c2) EXPECT_LE(c2.front().nccl_model_time, x.nccl_model_time);
  // NCCL_ALGO without Tree: the point is in no enabled region, so NCCL's own pick stands.
  NcclSettings ring;
  ring.algos = {Algo::RING};
  EXPECT_FALSE(predict_allreduce(p5, 32 * kMiB, ring).why.plugin_pick);
}

TEST(NcclNetPlugin, NoNvlsUnderNccl2185WithThePlugin) {
  // platform-aws.cpp: NCCL_NVLS_ENABLE=0 when ncclGetVersion < 21805.
  NcclTopology p5 = h100_nodes(2, 32, 12.5e9, NetPlugin::AWS_OFI_P5);
  p5.nccl_version = 21803;
  for (const auto& e : allreduce_candidates(p5, 64 * kMiB))
    EXPECT_TRUE(e.algo != Algo::NVLS && e.algo != Algo::NVLS_TREE) << to_string(e.algo);
  p5.nccl_version = 21805;
  bool nvls_tree = false;
  for (const auto& e : allreduce_candidates(p5, 64 * kMiB)) nvls_tree = nvls_tree || e.algo == Algo::NVLS_TREE;
  EXPECT_TRUE(nvls_tree);
}

// ---- What the plugin did to NCCL's pick (collective --explain "plugin:") ----
// "NCCL alone" is computed independently here: the same node without the plugin, its NICs as NCCL
// sees them through the plugin (8 devices of 4 x 100 Gb/s rails = 8 x 50 GB/s; the graphs are
// the same, RdmaRailsAreOneNcclDevicePerGpu), so neither the region tuner nor the 75 us reach it;
// "without the region tuner" adds the 75 us as the topology's latencyInter (tuning.cc adds both
// the same way).
namespace {
std::string pick_of(const NcclTopology& t, double bytes) {
  const auto e = predict_allreduce(t, bytes);
  return to_string(e.algo) + "/" + to_string(e.proto);
}
}  // namespace

TEST(NcclNetPlugin, PluginEffectRegionTunerForcedAgainstNcclAlone) {
  // 4 p5 nodes, 32 MiB: (2^25, 2^5) lies in Tree LL128's first polygon (P5RegionTunerPicks: its
  // right edge at 32 ranks is (36 MiB, 32)), so the region tuner forces Tree/LL128.
  const NcclTopology p5 = h100_nodes(4, 32, 12.5e9, NetPlugin::AWS_OFI_P5);
  NcclTopology alone = h100_nodes(4, 8, 50e9, NetPlugin::NONE);
  NcclTopology latency = alone;
  latency.net_latency = 75e-6;
  const auto fx = plugin_pick_effect(Func::ALL_REDUCE, p5, 32 * kMiB);
  EXPECT_EQ(fx.plugin, "aws-ofi-nccl/p5");
  EXPECT_EQ(fx.pick, "Tree/LL128");
  EXPECT_TRUE(fx.region_forced);
  EXPECT_EQ(fx.region_tuner, "forced");
  EXPECT_EQ(fx.nccl_alone, pick_of(alone, 32 * kMiB));
  EXPECT_EQ(fx.without_region_tuner, pick_of(latency, 32 * kMiB));
  EXPECT_DOUBLE_EQ(fx.reported_latency, 75e-6);
  ASSERT_NE(fx.nccl_alone, "Tree/LL128");  // else the case shows nothing
  EXPECT_EQ(fx.effect, "region_tuner");
  EXPECT_EQ(fx.text.rfind(
                "plugin: aws-ofi-nccl/p5 region tuner forced Tree/LL128 (NCCL alone would pick " + fx.nccl_alone, 0),
            0u)
      << fx.text;
}

TEST(NcclNetPlugin, PluginEffectReportedLatencyOrNone) {
  // 2 nodes: "Skip when two nodes or lesser" (the region tuner never forces); only the 75 us the
  // plugin reports can move NCCL's pick. Over the sizes 8 B - 8 GiB the effect says "reported
  // latency" exactly where the pick with +75 us latencyInter differs from the pick without.
  const NcclTopology p5 = h100_nodes(2, 32, 12.5e9, NetPlugin::AWS_OFI_P5);
  NcclTopology alone = h100_nodes(2, 8, 50e9, NetPlugin::NONE);
  NcclTopology latency = alone;
  latency.net_latency = 75e-6;
  int changed = 0, left = 0;
  for (double b = 8; b <= 8 * kGiB; b *= 2) {
    const auto fx = plugin_pick_effect(Func::ALL_REDUCE, p5, b);
    EXPECT_FALSE(fx.region_forced);
    EXPECT_EQ(fx.region_tuner, "two nodes or fewer: NCCL's own tuner");
    const std::string a = pick_of(alone, b), l = pick_of(latency, b);
    EXPECT_EQ(fx.nccl_alone, a) << b;
    EXPECT_EQ(fx.pick, l) << b;
    if (a != l) {
      ++changed;
      EXPECT_EQ(fx.effect, "reported_latency");
      EXPECT_EQ(fx.text, "plugin: aws-ofi-nccl/p5 reported latency 75 us changed NCCL's pick from " + a + " to " + l +
                             " (region tuner: two nodes or fewer: NCCL's own tuner)");
    } else {
      ++left;
      EXPECT_EQ(fx.effect, "none");
      EXPECT_EQ(fx.text, "plugin: aws-ofi-nccl/p5 left NCCL's pick " + a +
                             " alone (region tuner: two nodes or fewer: NCCL's own tuner; reported latency 75 us: "
                             "the same pick)");
    }
  }
  EXPECT_GT(changed, 0);  // 75 us per inter-node step moves the small sizes off the latency-bound pick
  EXPECT_GT(left, 0);
  // No plugin: no line. p4d: no region tuner.
  EXPECT_TRUE(plugin_pick_effect(Func::ALL_REDUCE, alone, kMiB).plugin.empty());
  NcclTopology p4d = alone;
  p4d.net_plugin = NetPlugin::AWS_OFI_P4D;
  p4d.nranks = 32;
  p4d.nnodes = 4;
  EXPECT_EQ(plugin_pick_effect(Func::ALL_REDUCE, p4d, kMiB).region_tuner, "p4d.24xlarge has no region tuner");
}

// ---- The region tuner's other cases (nccl_ofi_regions.cpp at 2daf7d30) ----
// Every point below is placed by hand in (log2 bytes, log2 ranks) from the source's vertices;
// points sit between vertex rows (ranks that are no vertex's y) so no ray runs through a vertex.
namespace {
std::string region_pick(NetPlugin p, Func f, int ranks_per_node, int nodes, double bytes) {
  const auto r = aws_ofi_region_pick(p, f, ranks_per_node * nodes, nodes, 0, bytes, all_enabled);
  return r ? to_string(r->algo) + "/" + to_string(r->proto) : std::string("NCCL");
}
}  // namespace

TEST(NcclNetPlugin, RegionTablesAreTheSourcesCounts) {
  // Regions per case and each region's num_vertices, as region_init_internal_p5_p5e /
  // region_init_internal_p5en write them; the transcription keeps every vertex.
  struct Case {
    NetPlugin p;
    Func f;
    int ppn;
    std::vector<int> vertices;
  };
  const std::vector<Case> cases = {
      {NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 8, {12, 3, 11, 17, 7}},
      {NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 2, {11, 14, 6, 3, 3, 10, 7, 6}},
      {NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 1, {6, 9, 4}},
      {NetPlugin::AWS_OFI_P5, Func::ALL_GATHER, 1, {4}},
      {NetPlugin::AWS_OFI_P5, Func::REDUCE_SCATTER, 1, {4}},
      {NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 8, {5, 7, 6, 12, 5}},
      {NetPlugin::AWS_OFI_P5EN, Func::ALL_GATHER, 8, {9, 12, 7}},
      {NetPlugin::AWS_OFI_P5EN, Func::REDUCE_SCATTER, 8, {7, 11, 7}},
      {NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 1, {4, 11, 6, 11, 5}},
      {NetPlugin::AWS_OFI_P5EN, Func::ALL_GATHER, 1, {12, 11, 5}},
      {NetPlugin::AWS_OFI_P5EN, Func::REDUCE_SCATTER, 1, {10, 9, 5}},
      // region_init_internal_p6
      {NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 8, {4, 10, 5, 19, 5}},
      {NetPlugin::AWS_OFI_P6, Func::ALL_GATHER, 8, {10, 14, 7}},
      {NetPlugin::AWS_OFI_P6, Func::REDUCE_SCATTER, 8, {11, 15, 7}},
      {NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 1, {5, 6, 8, 6, 4}},
      {NetPlugin::AWS_OFI_P6, Func::ALL_GATHER, 1, {3, 9, 12, 5}},
      {NetPlugin::AWS_OFI_P6, Func::REDUCE_SCATTER, 1, {3, 9, 9, 5}},
  };
  for (const Case& c : cases) {
    const auto& r = aws_ofi_regions(c.p, c.f, c.ppn * 4, 4);
    ASSERT_EQ(r.size(), c.vertices.size()) << to_string(c.p) << " " << to_string(c.f) << " ppn " << c.ppn;
    for (size_t i = 0; i < r.size(); ++i) {
      EXPECT_EQ(r[i].num_vertices, c.vertices[i]) << to_string(c.p) << " " << to_string(c.f) << " region " << i;
      EXPECT_EQ(static_cast<int>(r[i].vertices.size()), r[i].num_vertices) << to_string(c.f) << " region " << i;
    }
  }
  // PAT (NCCL_ALGO_PAT) leads p5en's 1-rank-per-node all-gather and reduce-scatter: no modelled algorithm.
  EXPECT_FALSE(aws_ofi_regions(NetPlugin::AWS_OFI_P5EN, Func::ALL_GATHER, 4, 4)[0].algo.has_value());
  // No regions: p5 all-gather / reduce-scatter at 8 or 2 ranks per node, p5en at 2, 4 ranks per node anywhere.
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P5, Func::ALL_GATHER, 32, 4).empty());
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P5, Func::REDUCE_SCATTER, 32, 4).empty());
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P5, Func::ALL_GATHER, 8, 4).empty());
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 8, 4).empty());
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 16, 4).empty());
  EXPECT_EQ(aws_ofi_region_skip_reason(NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 8, 4, 0),
            "no regions for AllReduce at 2 ranks per node");
}

TEST(NcclNetPlugin, P5TwoRanksPerNodeAllReduceRegions) {
  const auto at = [](int nodes, double bytes) {
    return region_pick(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 2, nodes, bytes);
  };
  // 5 nodes = 10 ranks, y = log2 10 = 3.32. Tree LL128 ends at the vertical edge x = log2 1051648
  // = 20.004 (y 3 to 3.58); Ring LL128 runs from there to the edge (41842688, 8) -> (296747008,
  // 64), i.e. (25.32, 3) -> (28.14, 6), at y 3.32: x 25.62; NVLS tree to the vertical edge x =
  // log2 275775488 = 28.04; Ring Simple from 28.04 to TUNER_MAX_SIZE (2^36.64).
  EXPECT_EQ(at(5, 512 * 1024), "Tree/LL128");      // 2^19
  EXPECT_EQ(at(5, 16 * kMiB), "Ring/LL128");       // 2^24
  EXPECT_EQ(at(5, 64 * kMiB), "NVLSTree/Simple");  // 2^26
  EXPECT_EQ(at(5, kGiB), "Ring/Simple");           // 2^30
  // 48 nodes = 96 ranks, y = 6.58. Ring LL128 ends at (257114112, 128) -> (296747008, 64): x
  // 28.02; Tree Simple (the 7th region) to (296747008, 64) -> (787480576, 128): x 28.97; Ring Simple
  // to the vertical x = 30 (1 GiB, 40 -> 128 ranks); NVLS tree (the 8th) beyond, to the edge
  // (TUNER_MAX_SIZE, 32) -> extend_region((787480576, 128), (1 GiB, 256)) = (2^35.36, 2^20).
  EXPECT_EQ(at(48, std::pow(2.0, 28.5)), "Tree/Simple");
  EXPECT_EQ(at(48, std::pow(2.0, 29.5)), "Ring/Simple");
  EXPECT_EQ(at(48, 2 * kGiB), "NVLSTree/Simple");  // 2^31
  // Two nodes: the tuner skips ("two nodes or lesser").
  EXPECT_EQ(at(2, 16 * kMiB), "NCCL");
}

TEST(NcclNetPlugin, OneRankPerNodeRegions) {
  // p5 all-reduce. 4 nodes = 4 ranks (y 2): Tree LL128 starts at 16 ranks; Ring LL128 reaches the
  // edge (4736000, 2) -> (269484032, 128) = (22.18, 1) -> (28.01, 7), at y 2: 23.15; Ring Simple beyond.
  const auto p5 = [](Func f, int nodes, double bytes) {
    return region_pick(NetPlugin::AWS_OFI_P5, f, 1, nodes, bytes);
  };
  EXPECT_EQ(p5(Func::ALL_REDUCE, 4, kMiB), "Ring/LL128");
  EXPECT_EQ(p5(Func::ALL_REDUCE, 4, kGiB), "Ring/Simple");
  // 32 ranks (y 5): Tree LL128 to (2367488, 16) -> (9999360, 64) = (21.18, 4) -> (23.25, 6): 22.21;
  // Ring LL128 to 22.18 + 4/6 x 5.83 = 26.06.
  EXPECT_EQ(p5(Func::ALL_REDUCE, 32, kMiB), "Tree/LL128");
  EXPECT_EQ(p5(Func::ALL_REDUCE, 32, 48 * kMiB), "Ring/LL128");  // 2^25.58
  EXPECT_EQ(p5(Func::ALL_REDUCE, 32, 256 * kMiB), "Ring/Simple");
  // p5 all-gather: Ring Simple right of (4 MiB, 2) -> (8 GiB, 2048) = (22, 1) -> (33, 11): at 4
  // ranks x 23.1. Reduce-scatter: right of (8 MiB, 2) -> (4 GiB, 1024) = (23, 1) -> (32, 10): x 24.
  EXPECT_EQ(p5(Func::ALL_GATHER, 4, 64 * kMiB), "Ring/Simple");
  EXPECT_EQ(p5(Func::ALL_GATHER, 4, kMiB), "NCCL");
  EXPECT_EQ(p5(Func::REDUCE_SCATTER, 4, 64 * kMiB), "Ring/Simple");
  EXPECT_EQ(p5(Func::REDUCE_SCATTER, 4, 8 * kMiB), "NCCL");  // 2^23 < 2^24

  // p5en all-reduce, 6 ranks (y 2.58): Tree LL left of x 16 (64 KiB) down to the closing edge
  // (64 KiB, TUNER_MAX_RANKS) -> (0, 2); Tree LL128 to (1 MiB, 4) -> (4 MiB, 8): 21.17; Ring LL128
  // to (6 MiB, 2) -> (48 MiB, 16) = (22.58, 1) -> (25.58, 4): 24.17; Ring Simple beyond.
  const auto en = [](Func f, int nodes, double bytes) {
    return region_pick(NetPlugin::AWS_OFI_P5EN, f, 1, nodes, bytes);
  };
  EXPECT_EQ(en(Func::ALL_REDUCE, 6, 8192), "Tree/LL");
  EXPECT_EQ(en(Func::ALL_REDUCE, 6, kMiB), "Tree/LL128");
  EXPECT_EQ(en(Func::ALL_REDUCE, 6, 8 * kMiB), "Ring/LL128");
  EXPECT_EQ(en(Func::ALL_REDUCE, 6, kGiB), "Ring/Simple");
  // 64 ranks (y 6): Tree LL128 holds x 16-20 there ((1 MiB, 32) -> (1 MiB, 96)); Tree Simple
  // (1 MiB + 1 B, 32 -> 96 ranks) to (32 MiB - 1 B, 32) -> (32 MiB, 128): x 20-25.
  EXPECT_EQ(en(Func::ALL_REDUCE, 64, 4 * kMiB), "Tree/Simple");
  // All-gather, 6 ranks: PAT left of (1 MiB, 2) -> (8 MiB, 8) = (20, 1) -> (23, 3): 22.38; Ring
  // LL128 to (4 MiB, 2) -> (48 MiB, 16) = (22, 1) -> (25.58, 4): 23.89; Ring Simple beyond.
  EXPECT_EQ(en(Func::ALL_GATHER, 6, 12 * kMiB), "Ring/LL128");  // 2^23.58
  EXPECT_EQ(en(Func::ALL_GATHER, 6, kGiB), "Ring/Simple");
  // The PAT region holds 1 MiB: aws-ofi-nccl forces PAT there, which the model has not; the scan
  // finds no modelled region, so NCCL's own pick stands, and the plugin says why.
  EXPECT_EQ(en(Func::ALL_GATHER, 6, kMiB), "NCCL");
  EXPECT_TRUE(aws_ofi_in_pat_region(NetPlugin::AWS_OFI_P5EN, Func::ALL_GATHER, 6, 6, kMiB, all_enabled));
  EXPECT_FALSE(aws_ofi_in_pat_region(NetPlugin::AWS_OFI_P5EN, Func::ALL_GATHER, 6, 6, 12 * kMiB, all_enabled));
  // Reduce-scatter, 6 ranks: PAT left of (1 MiB, 2) -> (16 MiB, 32) = (20, 1) -> (24, 5): 21.58.
  EXPECT_EQ(en(Func::REDUCE_SCATTER, 6, 12 * kMiB), "Ring/LL128");
  EXPECT_EQ(en(Func::REDUCE_SCATTER, 6, kGiB), "Ring/Simple");
  EXPECT_TRUE(aws_ofi_in_pat_region(NetPlugin::AWS_OFI_P5EN, Func::REDUCE_SCATTER, 6, 6, kMiB, all_enabled));
  // --explain's plugin line names it: 6 p5en nodes of one H100 each, all-gather 1 MiB.
  NcclTopology one = h100_nodes(6, 16, 25e9, NetPlugin::AWS_OFI_P5EN);
  one.nranks = 6;
  const auto fx = plugin_pick_effect(Func::ALL_GATHER, one, kMiB);
  EXPECT_FALSE(fx.region_forced);
  EXPECT_EQ(fx.region_tuner, "in its PAT region, which ddpsim does not model: NCCL's own pick among the modelled ones");
  EXPECT_TRUE(plugin_pick_effect(Func::ALL_GATHER, one, kGiB).region_forced);  // Ring Simple's region
}

TEST(NcclNetPlugin, P5enEightRanksPerNodeAllGatherAndReduceScatter) {
  const auto at = [](Func f, int nodes, double bytes) {
    return region_pick(NetPlugin::AWS_OFI_P5EN, f, 8, nodes, bytes);
  };
  // All-gather, 4 nodes = 32 ranks (y 5): Ring LL left of (768 KiB, 16) -> (4.5 MiB, 128) =
  // (19.58, 4) -> (22.17, 7): 20.45; Ring LL128 to (226 MiB, 16) -> (912 MiB, 64) = (27.82, 4) ->
  // (29.83, 6): 28.83; Ring Simple from (472 MiB, 32) = 28.88 to TUNER_MAX_SIZE.
  EXPECT_EQ(at(Func::ALL_GATHER, 4, 512 * 1024), "Ring/LL");
  EXPECT_EQ(at(Func::ALL_GATHER, 4, 64 * kMiB), "Ring/LL128");
  EXPECT_EQ(at(Func::ALL_GATHER, 4, 4 * kGiB), "Ring/Simple");
  // Reduce-scatter, 6 nodes = 48 ranks (y 5.58): Ring LL left of the same first edge: 20.95; Ring
  // LL128 to (562 MiB, 32) -> (2.25 GiB, 128) = (29.13, 5) -> (31.17, 7): 29.73; Ring Simple beyond.
  EXPECT_EQ(at(Func::REDUCE_SCATTER, 6, kMiB), "Ring/LL");
  EXPECT_EQ(at(Func::REDUCE_SCATTER, 6, 64 * kMiB), "Ring/LL128");
  EXPECT_EQ(at(Func::REDUCE_SCATTER, 6, 4 * kGiB), "Ring/Simple");
  // Through the NCCL model (FSDP's all-gather on aws-p5en: 16 x 200 Gb/s EFA per node): the region
  // tuner's pick is NCCL's and says so.
  NcclTopology en = h100_nodes(4, 16, 25e9, NetPlugin::AWS_OFI_P5EN);
  const auto e = predict_collective(Func::ALL_GATHER, en, 64 * kMiB);
  EXPECT_EQ(to_string(e.algo) + "/" + to_string(e.proto), "Ring/LL128");
  EXPECT_TRUE(e.why.plugin_pick);
}

// A log names the plugin's release ("NET/OFI Initializing aws-ofi-nccl 1.9.1-aws"); what entered
// when (git log -S over aws-ofi-nccl's src/ and include/): grouped rails and the 75 us latency
// 1.7.0, the NVLS chunk settings 1.8.0, NCCL_BUFFSIZE 8 MiB and the region tuner 1.10.0.
TEST(NcclNetPlugin, EarlierReleasesLackWhatCameLater) {
  EXPECT_EQ(aws_ofi_version_code("1.7.4"), 10704);
  EXPECT_EQ(aws_ofi_version_code("1.10.0-aws"), 11000);
  EXPECT_EQ(aws_ofi_version_code("1.100.0"), 0);
  EXPECT_EQ(aws_ofi_version_code("1.7"), 0);
  const AwsOfiPlatform* p19 = aws_ofi_platform(NetPlugin::AWS_OFI_P5, 10901);
  ASSERT_NE(p19, nullptr);
  EXPECT_TRUE(p19->rdma);
  EXPECT_DOUBLE_EQ(p19->reported_latency_s, 75e-6);
  EXPECT_DOUBLE_EQ(p19->nvls_chunk, 512 * 1024.0);
  EXPECT_DOUBLE_EQ(p19->buffsize, 0);
  EXPECT_FALSE(p19->region_tuner);
  EXPECT_DOUBLE_EQ(aws_ofi_platform(NetPlugin::AWS_OFI_P5, 10704)->nvls_chunk, 0);
  EXPECT_EQ(aws_ofi_platform(NetPlugin::AWS_OFI_P5, 10602), nullptr);
  EXPECT_TRUE(aws_ofi_platform(NetPlugin::AWS_OFI_P5, 12101)->region_tuner);

  // 4 p5 nodes, 32 MiB (PluginEffectRegionTunerForcedAgainstNcclAlone): with 1.9.1 no region tuner
  // forces Tree/LL128; NCCL picks with the reported latency, and the Simple buffer is NCCL's 4 MiB.
  NcclTopology v19 = h100_nodes(4, 32, 12.5e9, NetPlugin::AWS_OFI_P5);
  v19.net_plugin_version = 10901;
  NcclTopology latency = h100_nodes(4, 8, 50e9, NetPlugin::NONE);
  latency.net_latency = 75e-6;
  const auto fx = plugin_pick_effect(Func::ALL_REDUCE, v19, 32 * kMiB);
  EXPECT_FALSE(fx.region_forced);
  EXPECT_EQ(fx.pick, pick_of(latency, 32 * kMiB));
  EXPECT_EQ(fx.region_tuner, "aws-ofi-nccl 1.9.1 has no region tuner (1.10.0+; its model-based tuner is not modelled)");
  EXPECT_DOUBLE_EQ(tune_model(v19).simple_buffsize, 4 * kMiB);
  // Before 1.7 the plugin changes nothing the model knows: 32 NICs as 32 NCCL devices.
  NcclTopology v16 = v19;
  v16.net_plugin_version = 10602;
  EXPECT_EQ(pick_of(v16, 32 * kMiB), pick_of(h100_nodes(4, 32, 12.5e9, NetPlugin::NONE), 32 * kMiB));
  EXPECT_EQ(aws_ofi_region_skip_reason(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 32, 4, 0, 10602),
            "aws-ofi-nccl 1.6.2: nothing of the plugin applies before 1.7.0");
  EXPECT_EQ(aws_ofi_region_skip_reason(NetPlugin::AWS_OFI_P5, Func::ALL_REDUCE, 32, 4, 0, 10704),
            "aws-ofi-nccl 1.7.4 has no region tuner (1.10.0+)");
  EXPECT_EQ(aws_ofi_region_skip_reason(NetPlugin::AWS_OFI_P4D, Func::ALL_REDUCE, 32, 4, 0, 10901),
            "p4d.24xlarge has no region tuner");
}

// p6-b200 (region_init_internal_p6 and the P6 rules of region_get_coll_info_internal_v3, aws-ofi-nccl
// 2daf7d30): its region tuner's picks, and the channel count it sets for Tree LL128 all-reduces of
// 4-32 MiB, worked out by hand from calculateChunkSizeTreeLL128 / calculateBestNChannelTree.
TEST(NcclNetPlugin, P6RegionTunerPicks) {
  const auto pick = [](Func f, int nodes, double bytes) {
    return aws_ofi_region_pick(NetPlugin::AWS_OFI_P6, f, 8 * nodes, nodes, 0, bytes, all_enabled);
  };
  // All-reduce, 32 ranks: Tree LL up to 384 KiB (the vertical edge at 393216 B), Tree LL128 to the
  // edge (4.5 MiB, 16) -> (17.5 MiB, 32): at 32 ranks 17.5 MiB, the region's vertex.
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 256 * 1024)->algo, Algo::TREE);
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 256 * 1024)->proto, Proto::LL);
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 8 * kMiB)->proto, Proto::LL128);
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 8 * kMiB)->algo, Algo::TREE);
  // 64 MiB at 32 ranks: inside Ring LL128's pentagon (18350080, 32) -> (133693440, 32) ->
  // (120061952, 64) -> (90701824, 128) -> (50855936, 64), on its bottom edge.
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 64 * kMiB)->algo, Algo::RING);
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 64 * kMiB)->proto, Proto::LL128);
  // 1 GiB at 32 ranks: right of (435159040, 32) on Ring Simple's left edge: Ring Simple.
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 1.0 * kGiB)->algo, Algo::RING);
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 1.0 * kGiB)->proto, Proto::SIMPLE);
  // 256 MiB at 32 ranks: between Ring LL128 (ends at 127.5 MiB) and Ring Simple (starts at 415
  // MiB): NVLS tree Simple.
  EXPECT_EQ(pick(Func::ALL_REDUCE, 4, 256 * kMiB)->algo, Algo::NVLS_TREE);
  // All-gather at 8 ranks per node (which p5 has no regions for): Ring LL up to 1.5 MiB at 32
  // ranks (the vertex (1572864, 32)), Ring LL128 from there.
  EXPECT_EQ(pick(Func::ALL_GATHER, 4, 1 * kMiB)->proto, Proto::LL);
  EXPECT_EQ(pick(Func::ALL_GATHER, 4, 64 * kMiB)->proto, Proto::LL128);
  EXPECT_EQ(pick(Func::REDUCE_SCATTER, 4, 64 * kMiB)->algo, Algo::RING);
  // 1 rank per node, all-gather: the PAT region first (not modelled), so no modelled pick at 1 MiB
  // on 8 nodes ((1048576, 4) -> (4194305, 16) passes 2^21 B at 8 ranks, so 1 MiB is left of it).
  EXPECT_FALSE(aws_ofi_region_pick(NetPlugin::AWS_OFI_P6, Func::ALL_GATHER, 8, 8, 0, 1 * kMiB, all_enabled));
  EXPECT_TRUE(aws_ofi_in_pat_region(NetPlugin::AWS_OFI_P6, Func::ALL_GATHER, 8, 8, 1 * kMiB, all_enabled));
  // No regions at 2 ranks per node; two nodes or fewer: NCCL's own tuner.
  EXPECT_TRUE(aws_ofi_regions(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 8, 4).empty());
  EXPECT_FALSE(pick(Func::ALL_REDUCE, 2, 8 * kMiB));
}

TEST(NcclNetPlugin, P6TreeLL128ChannelRule) {
  // calculateChunkSizeTreeLL128 by hand. Buffer 120 x 640 x 8 x 8 B = 4,915,200; step 614,400 B;
  // LL128 data 15/16: 576,000. 4 nodes: log2 2, steps 1 + 2 + 0.8 = 3.8, thresholds 3.8 x 64 / 8 =
  // 30.4 and 3.8 x 16 / 8 = 7.6 chunks per channel.
  // 8 MiB (8,388,608 B), 16 channels: the first loop halves while the integer quotient bytes /
  // (channels x chunk) < 30.4 and the chunk > 131072: 576000 (quotient 0) -> 288000 (1) -> 144000
  // (3) -> 72000; the second while < 7.6 and > 32768: 72000 (7) -> 36000 (14: stop). Grain
  // 32 x 8 / 16 x 15 x 8 = 1920 B: 36000 -> 18 grains, 18 x 480 = 8640 elements, / 480 per slice =
  // 18 slices x 2048 wire bytes = 36864.
  EXPECT_DOUBLE_EQ(aws_ofi_tree_ll128_chunk(8 * kMiB, 16, 2), 36864);
  // 24 channels: 8388608 / (24 x 72000) = 4 -> 36000: 9 -> stop: the same 36864.
  EXPECT_DOUBLE_EQ(aws_ofi_tree_ll128_chunk(8 * kMiB, 24, 2), 36864);
  // 32 channels: 8388608 / (32 x 72000) = 3 -> 36000: 7 < 7.6 -> 18000 (below 32768: stop):
  // 9 grains, 4320 elements, 9 slices = 18432.
  EXPECT_DOUBLE_EQ(aws_ofi_tree_ll128_chunk(8 * kMiB, 32, 2), 18432);
  // Best: the largest chunk, the larger channel count on a tie: 24 at 8 MiB on 4 nodes.
  EXPECT_EQ(aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 8 * kMiB, Algo::TREE, Proto::LL128),
            24);
  // 4 MiB on 4 nodes: 16, 24 and 32 channels all end at 18000 -> 18432: a tie, 32.
  EXPECT_DOUBLE_EQ(aws_ofi_tree_ll128_chunk(4 * kMiB, 16, 2), 18432);
  EXPECT_EQ(aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 4 * kMiB, Algo::TREE, Proto::LL128),
            32);
  // Only P6, Tree LL128 all-reduces, 8 ranks per node, 4-32 MiB, aws-ofi-nccl 1.17.0+.
  EXPECT_EQ(
      aws_ofi_region_channels(NetPlugin::AWS_OFI_P5EN, Func::ALL_REDUCE, 32, 4, 8 * kMiB, Algo::TREE, Proto::LL128), 0);
  EXPECT_EQ(aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 8 * kMiB, Algo::RING, Proto::LL128),
            0);
  EXPECT_EQ(
      aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 33 * kMiB, Algo::TREE, Proto::LL128), 0);
  EXPECT_EQ(aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 8 * kMiB, Algo::TREE, Proto::LL128,
                                    11601),
            0);
  EXPECT_EQ(aws_ofi_region_channels(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 8 * kMiB, Algo::TREE, Proto::LL128,
                                    11700),
            24);

  // Through the NCCL model, 4 nodes of 8 B200-class GPUs with 8 x 400 Gb/s EFA: NCCL runs the
  // plugin's count, at most its communicator's channels (NCCL_MIN_NCHANNELS 32 here so that 24 fits).
  NcclTopology t = h100_nodes(4, 8, 50e9, NetPlugin::AWS_OFI_P6);
  NcclSettings s;
  s.min_channels = 32;
  const auto with = collective_candidates(Func::ALL_REDUCE, t, 8 * kMiB, s);
  ASSERT_FALSE(with.empty());
  EXPECT_EQ(with.front().algo, Algo::TREE);
  EXPECT_EQ(with.front().proto, Proto::LL128);
  EXPECT_TRUE(with.front().why.plugin_pick);
  EXPECT_EQ(with.front().why.plugin_channels, 24);
  EXPECT_EQ(with.front().nchannels, 24);
  const auto fx = plugin_pick_effect(Func::ALL_REDUCE, t, 8 * kMiB, s);
  EXPECT_EQ(fx.channels, 24);
  EXPECT_NE(fx.text.find("set 24 channels (calculateBestNChannelTree), NCCL runs 24"), std::string::npos) << fx.text;
  // The borrowed EFA step is named where it acts (across nodes); p5en's own is not.
  EXPECT_EQ(fx.efa_step_from, "p5en");
  EXPECT_NE(fx.text.find("EFA step 18 us per inter-node step, AWS's p5en figure"), std::string::npos) << fx.text;
  EXPECT_EQ(
      plugin_pick_effect(Func::ALL_REDUCE, h100_nodes(4, 16, 25e9, NetPlugin::AWS_OFI_P5EN), 8 * kMiB).efa_step_from,
      "");
  // Without the setting the communicator has fewer channels than 24: NCCL runs its own count.
  const auto plain = collective_candidates(Func::ALL_REDUCE, t, 8 * kMiB, {});
  EXPECT_EQ(plain.front().why.plugin_channels, 24);
  EXPECT_LT(plain.front().nchannels, 24);
  EXPECT_NE(plugin_pick_effect(Func::ALL_REDUCE, t, 8 * kMiB).text.find("(its communicator's channels)"),
            std::string::npos);
}

TEST(NcclNetPlugin, P6IsP5enPlatformEntryFrom1160) {
  // platform-aws.cpp serves p6-b200 with the "p5en/p6-b200" entry: 35 us reported, RDMA, the
  // forced NCCL settings; AWS's EFA step model has no P6 entry: p5en's 18 us, named as borrowed.
  const AwsOfiPlatform* p6 = aws_ofi_platform(NetPlugin::AWS_OFI_P6);
  const AwsOfiPlatform* p5en = aws_ofi_platform(NetPlugin::AWS_OFI_P5EN);
  ASSERT_NE(p6, nullptr);
  EXPECT_STREQ(p6->name, "p5en/p6-b200");
  EXPECT_DOUBLE_EQ(p6->reported_latency_s, 35e-6);
  EXPECT_DOUBLE_EQ(p6->model_net_lat_s, p5en->model_net_lat_s);
  EXPECT_STREQ(p6->model_net_lat_from, "p5en");
  EXPECT_STREQ(p5en->model_net_lat_from, "");
  EXPECT_DOUBLE_EQ(p6->buffsize, 8 * kMiB);
  EXPECT_TRUE(p6->region_tuner);
  // P6 entered in 1.16.0: an older plugin has none of it.
  EXPECT_EQ(aws_ofi_platform(NetPlugin::AWS_OFI_P6, 11502), nullptr);
  EXPECT_NE(aws_ofi_platform(NetPlugin::AWS_OFI_P6, 11600), nullptr);
  EXPECT_EQ(aws_ofi_region_skip_reason(NetPlugin::AWS_OFI_P6, Func::ALL_REDUCE, 32, 4, 0, 11502),
            "aws-ofi-nccl 1.15.2 predates p6-b200 (1.16.0): nothing of its P6 support applies");
}
