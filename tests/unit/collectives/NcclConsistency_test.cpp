// Consistency properties of the NCCL model over every bundled cluster preset x {1, 2, 4, ...,
// 1024} nodes x all-reduce sizes 8 B - 8 GiB (powers of two). Closed form, no SimGrid: the sweep
// is a few thousand predict_allreduce() calls.
//
// Properties of the NCCL model (docs/accuracy.md), each with the exceptions the model allows and why:
//  P1 pick consistency: the time NCCL's pick achieves is within kPickSlack (10 %) of the best
//     achieved time over the candidates NCCL weighs, except where a named mechanism that NCCL's
//     estimate leaves out applies (exceptions A-E in the test, counted and printed).
//  P2 node doubling: for a fixed size the achieved time at 2N nodes is never below the best
//     candidate's achieved time at N (it can be below NCCL's pick at N only where P1 lets a
//     mis-pick through; the count is printed).
//  P3 adding latency (net_latency +3 us) or removing bandwidth (half the NIC or NVLink bandwidth)
//     never makes an all-reduce faster than the best candidate was before (same caveat).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "support/builders.hpp"

using namespace ddpsim::collectives;

namespace {

constexpr double kPickSlack = 0.10;  // P1: within 10 % of the best candidate
constexpr double kTol = 1e-9;        // relative: float noise only

std::vector<double> sizes() {
  std::vector<double> v;
  for (double b = 8; b <= 8.0 * 1024 * 1024 * 1024; b *= 2) v.push_back(b);
  return v;
}

std::vector<int> node_counts() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}; }

struct Preset {
  std::string name;
  ddpsim::config::ClusterSpec cluster;
  NcclSettings settings;  // NCCL's defaults, or NCCL_COLLNET_ENABLE=1 on a SHARP fabric
};

// Every preset with NCCL's defaults; a preset whose fabric reduces in the network (inter_node.sharp)
// a second time with NCCL_COLLNET_ENABLE=1, so that CollNetDirect / CollNetChain and multi-node NVLS
// (which needs CollNet, enqueue.cc) are swept as well.
std::vector<Preset> presets() {
  const auto cat = ddpsim::test_support::source_catalog();
  std::vector<Preset> out;
  for (const auto& n : cat.names(ddpsim::config::Kind::CLUSTER)) {
    const auto c = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, n));
    out.push_back({n, c, {}});
    if (c.sharp) {
      NcclSettings s;
      s.collnet_enable = true;
      out.push_back({n + "+collnet", c, s});
    }
  }
  return out;
}

// A preset without NICs cannot span nodes.
bool can_span(const ddpsim::config::ClusterSpec& c) { return c.inter_link.has_value() && c.nics_per_node > 0; }

// Exception F (the model, P2/P3 only): rack-scale NVLink nodes (NVL72 presets, 72 GPUs per NCCL
// node under MNNVL). NVLS tree's pipeline fill (exception B) is (stages - 1) loops of nvlsChannels
// x 32 heads x chunk, and both factors change with the node count and NIC speed: nvls.cc halves
// the tree chunk from 4 nodes on (128 -> 64 KiB) and, from 2.30.3, ncclNvlsTreeSm100Tuning runs 32
// channels on 2 nodes and 24 from 4 nodes with 400 Gb/s NICs (32 again below 48 GB/s NICs). The
// fill then falls by more than a doubling adds: checked in session 6 without this exception,
// gb200-nvl72 x4 beats its 2-rack best by 66 us at 128 MiB - 8 GiB (P2) and half the NIC bandwidth
// is 2-8 % faster at 128-512 racks, 1-8 MiB (P3); gb300-nvl72 passed. The NVL72 fill is not
// validated (the 1-rack CoreWeave table rises more steeply with size than the model, NOTES.md), so
// the presets are skipped for P2/P3, not P1.
bool rack_scale(const ddpsim::config::ClusterSpec& c) { return c.gpus_per_node > 8; }

NcclTopology topo_for(ddpsim::config::ClusterSpec c, int nodes) {
  c.nodes = nodes;
  return nccl_topology(c);
}

std::string where(const std::string& preset, int nodes, double bytes) {
  return preset + " x" + std::to_string(nodes) + " nodes, " + std::to_string(static_cast<long long>(bytes)) + " B";
}

// Every (preset, node count it can span, size) with at least two ranks.
template <typename Fn>
void for_each_point(Fn&& fn) {
  for (const auto& p : presets()) {
    for (int nodes : node_counts()) {
      if (nodes > 1 && !can_span(p.cluster)) continue;
      const NcclTopology topo = topo_for(p.cluster, nodes);
      if (topo.nranks < 2) continue;
      for (double bytes : sizes()) fn(p, nodes, topo, bytes);
    }
  }
}

}  // namespace

TEST(NcclConsistency, PickAchievesNearTheBestCandidate) {
  int checked = 0, worst_at = 0, excepted = 0;
  double worst = 0;
  std::string worst_where;
  for (const auto& p : presets()) {
    for (int nodes : node_counts()) {
      if (nodes > 1 && !can_span(p.cluster)) continue;
      const NcclTopology topo = topo_for(p.cluster, nodes);
      if (topo.nranks < 2) continue;
      for (double bytes : sizes()) {
        const auto c = allreduce_candidates(topo, bytes, p.settings);
        ASSERT_FALSE(c.empty());
        double best = c.front().time;
        for (const auto& e : c) best = std::min(best, e.time);
        const double gap = c.front().time / best - 1;
        ++checked;
        const auto& pick = c.front();
        // Exception A (NCCL itself): enqueue.cc topoGetAlgoInfo estimates every candidate with all
        // channels and shrinks the channel count only after the pick, so a pick that runs on
        // fewer channels is slower than NCCL thought while the others are unaffected.
        const NcclTuning tuning = tune_model(topo);
        const bool shrunk =
            (pick.algo == Algo::RING || pick.algo == Algo::TREE) && pick.nchannels < tuning.comm_channels;
        // Exception B (NCCL's estimate leaves it out, measured): NVLS / NVLS tree pay item 9's
        // pipeline fill (NOTES.md), which NCCL's affine estimate omits. At 4 nodes the Voltage
        // Park H100 table (tests/data/published_nccl_tests, NCCL 2.24.3, default algorithm)
        // measures 373 us at 32 MiB where NCCL 2.24.3 estimates its NVLS-tree pick at 291 us and
        // the model gives 375 us: NCCL's estimate is the optimistic one there (nccl-tests#309's
        // 4-node table, NCCL 2.26.2: 376 us against an estimate of 291 us). At 2 nodes the H100
        // table shows the fill over-estimated instead (model 9-25 % slow at 2-8 MiB). Counted
        // where the fill alone (achieved latency minus NCCL's tuner latency) exceeds the slack of
        // the achieved time (session 5: below 64 MiB, which missed Blackwell / NVL72 nodes, whose
        // loops of 24-32 channels x 8-32 heads keep the fill above 10 % to 64 MiB and beyond).
        const bool nvls_pick = pick.algo == Algo::NVLS_TREE || pick.algo == Algo::NVLS;
        const bool nvls_fill =
            nvls_pick && pick.latency - tuning.latency[static_cast<int>(pick.algo)][static_cast<int>(pick.proto)] >
                             kPickSlack * pick.time;
        // Exception C (NCCL's formula leaves it out): a Simple ring pays the per-slice fence and
        // flag of prims_simple.h on every hop (item 1), which bends the measured A100 NVSwitch
        // curve (shared log, 8.8 % median) but not NCCL's affine estimate.
        const bool simple_ring = pick.algo == Algo::RING && pick.proto == Proto::SIMPLE;
        // Exception D (NCCL's formula leaves it out): a tree across nodes is held to the NICs'
        // line rate (item 7, 2 bytes per byte on an inner node of a double binary tree beyond two
        // nodes); NCCL's tree figure ignores the NIC count.
        const double nic_cap = topo.nics_per_node * topo.nic_bw / (topo.nnodes <= 2 ? 1.0 : 2.0);
        const bool tree_nic = pick.algo == Algo::TREE && topo.nnodes > 1 && pick.bandwidth >= 0.999 * nic_cap;
        // Exception E (NCCL's estimate adds what the model replaces): the best candidate is a
        // Simple ring that achieves more than the slack below NCCL's own estimate of it. Across
        // nodes tuning.cc multiplies a Simple ring's latency by its "plateau effect of ring"
        // factor (2.8+: 1.9 from nRanks/16 x 64 KiB; before 1.4, 1.9 on Volta), an empirical
        // correction the model's achieved time does not carry: it charges item 1's slice
        // schedule instead, with item 3's inter-node hop share. NCCL then passes over the ring
        // (azure-nc12s-v3, 2 x V100 PCIe per node over 25 GbE, across nodes at 128 KiB - 2 MiB).
        const AllReduceEstimate* best_e = &c.front();
        for (const auto& e : c)
          if (e.time < best_e->time) best_e = &e;
        const bool ring_below_estimate = best_e->algo == Algo::RING && best_e->proto == Proto::SIMPLE &&
                                         best_e->time < (1 - kPickSlack) * best_e->nccl_model_time;
        // Exception G (NCCL's pick, explained by its tuner plugin): aws-ofi-nccl's region tuner
        // (src/tuner/nccl_ofi_regions.cpp, p5/p5en presets beyond two nodes) sets its polygon's
        // (algorithm, protocol) to cost 0, whatever NCCL or the model estimates for the others.
        const bool plugin_pick = pick.why.plugin_pick;
        // Exception H (NCCL's pick, explained by its net plugin): aws-ofi-nccl reports a network
        // latency (platform-aws.cpp: 75 us p4d/p5, 35 us p5en) "because NCCL's internal tuner
        // choices work better with this value"; tuning.cc adds it to every inter-node step, twice
        // for Simple, so it weighs on the best candidate more than on the pick. It is a tuner
        // input, not part of the achieved time (why.net_step_latency).
        const bool reported_latency = best_e->why.net_step_latency < pick.why.net_step_latency - 1e-9;
        if (shrunk || nvls_fill || simple_ring || tree_nic || ring_below_estimate || plugin_pick || reported_latency) {
          ++excepted;
          continue;
        }
        if (gap > worst) {
          worst = gap;
          worst_where =
              where(p.name, nodes, bytes) + " pick " + to_string(c.front().algo) + "/" + to_string(c.front().proto);
          worst_at = checked;
        }
        EXPECT_LE(gap, kPickSlack) << where(p.name, nodes, bytes) << ": NCCL picks " << to_string(c.front().algo) << "/"
                                   << to_string(c.front().proto) << " achieving " << c.front().time * 1e6
                                   << " us, best candidate " << best * 1e6 << " us";
      }
    }
  }
  std::printf("[consistency] P1 %d points (%d excepted), worst pick gap %.1f %% at %s\n", checked, excepted,
              100 * worst, worst_where.c_str());
  (void)worst_at;
}

TEST(NcclConsistency, DoublingNodesNeverBeatsTheBestAtHalfTheNodes) {
  // The pick at 2N may beat the pick at N only by switching to something that would already have
  // been at least as fast at N: the achieved time at 2N is never below the best candidate's
  // achieved time at N. (Where NCCL's pick at N is not the fastest candidate, P1 bounds the gap.)
  int checked = 0, pick_faster = 0;
  for (const auto& p : presets()) {
    if (!can_span(p.cluster) || rack_scale(p.cluster)) continue;  // exception F
    for (double bytes : sizes()) {
      double prev_best = 0, prev_pick = 0;
      bool have_prev = false;
      for (int nodes : node_counts()) {
        const NcclTopology topo = topo_for(p.cluster, nodes);
        if (topo.nranks < 2) continue;
        const auto c = allreduce_candidates(topo, bytes, p.settings);
        double best = c.front().time;
        for (const auto& e : c) best = std::min(best, e.time);
        if (have_prev) {
          ++checked;
          if (c.front().time < prev_pick * (1 - kTol)) ++pick_faster;
          EXPECT_GE(c.front().time, prev_best * (1 - kTol))
              << where(p.name, nodes, bytes) << ": " << c.front().time * 1e6 << " us (" << to_string(c.front().algo)
              << "/" << to_string(c.front().proto) << ") < best " << prev_best * 1e6 << " us at half the nodes";
        }
        prev_best = best;
        prev_pick = c.front().time;
        have_prev = true;
      }
    }
  }
  std::printf("[consistency] P2 %d doublings, %d faster than NCCL's pick at half the nodes (never than its best)\n",
              checked, pick_faster);
}

TEST(NcclConsistency, MoreLatencyOrLessBandwidthNeverBeatsTheBestBefore) {
  int checked = 0, pick_faster = 0;
  for (const auto& p : presets()) {
    if (rack_scale(p.cluster)) continue;  // exception F
    for (int nodes : node_counts()) {
      if (nodes > 1 && !can_span(p.cluster)) continue;
      const NcclTopology base = topo_for(p.cluster, nodes);
      if (base.nranks < 2) continue;
      std::vector<std::pair<std::string, NcclTopology>> worse;
      if (nodes > 1) {
        NcclTopology t = base;
        t.net_latency += 3e-6;
        worse.emplace_back("+3 us net_latency", t);
        t = base;
        t.nic_bw *= 0.5;
        worse.emplace_back("half NIC bandwidth", t);
      }
      if (base.nranks / base.nnodes > 1) {
        NcclTopology t = base;
        t.intra_bw *= 0.5;
        if (t.intra_peer_bw > 0) t.intra_peer_bw *= 0.5;
        worse.emplace_back("half intra-node bandwidth", t);
      }
      for (double bytes : sizes()) {
        // Worse hardware may move NCCL's pick to a candidate that was already faster (a pick P1
        // lets through), never below the best candidate on the better hardware.
        double best0 = 0;
        bool first = true;
        for (const auto& e : allreduce_candidates(base, bytes, p.settings)) {
          best0 = first ? e.time : std::min(best0, e.time);
          first = false;
        }
        const double pick0 = predict_allreduce(base, bytes, p.settings).time;
        for (const auto& [what, t] : worse) {
          ++checked;
          const AllReduceEstimate e = predict_allreduce(t, bytes, p.settings);
          if (e.time < pick0 * (1 - kTol)) ++pick_faster;
          EXPECT_GE(e.time, best0 * (1 - kTol)) << where(p.name, nodes, bytes) << " with " << what << ": "
                                                << e.time * 1e6 << " us < best " << best0 * 1e6 << " us";
        }
      }
    }
  }
  std::printf("[consistency] P3 %d perturbations, %d faster than NCCL's pick before (never than its best)\n", checked,
              pick_faster);
}

// --explain's "achieved vs NCCL's estimate" column: every candidate whose achieved time differs
// from NCCL's own estimate names at least one mechanism, and one that names none achieves exactly
// NCCL's estimate; the recorded NCCL bandwidth and latency reproduce NCCL's estimate.
TEST(NcclConsistency, EveryDifferenceFromNcclsEstimateIsNamed) {
  int checked = 0, differ = 0;
  for (const auto& p : presets()) {
    for (int nodes : node_counts()) {
      if (nodes > 1 && !can_span(p.cluster)) continue;
      for (int g : {1, 8}) {
        NcclTopology topo = topo_for(p.cluster, nodes);
        if (topo.nranks < 2 || g > topo.nranks / topo.nnodes) continue;
        topo.gpus_per_process = g;
        for (double bytes : sizes()) {
          for (const auto& e : allreduce_candidates(topo, bytes, p.settings)) {
            ++checked;
            const std::string why = explain_difference(e);
            const bool same = std::abs(e.time - e.nccl_model_time) <= 1e-9 * e.nccl_model_time;
            if (!same) ++differ;
            EXPECT_EQ(why.empty(), same) << where(p.name, nodes, bytes) << " " << to_string(e.algo) << "/"
                                         << to_string(e.proto) << ": achieved " << e.time * 1e6 << " us, NCCL "
                                         << e.nccl_model_time * 1e6 << " us, why '" << why << "'";
            EXPECT_NEAR(e.why.nccl_latency + bytes / e.why.nccl_bandwidth, e.nccl_model_time, 1e-9 * e.nccl_model_time);
          }
        }
      }
    }
  }
  std::printf("[consistency] why: %d candidates, %d differ from NCCL's estimate, each with a named mechanism\n",
              checked, differ);
}

// The column's figures by hand. One DGX H100 node, 8 MiB: NVLS at the node's NVLS rate with the
// fill of item 9: enqueue.cc shrinks the 128 KiB chunk to 64 KiB (8 MiB < 64 x 128 ops x 128 KiB)
// and 32 KiB (< 8 x 128 x 64 KiB), not to 16 KiB (8 MiB = 2 x 128 x 32 KiB), so a loop is 128 x
// 32 KiB = 4 MiB and the three-stage pipeline adds two loops.
TEST(NcclConsistency, ExplainedFiguresByHand) {
  const auto cat = ddpsim::test_support::source_catalog();
  auto h100 = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-h100"));
  const NcclTopology one = topo_for(h100, 1);
  const AllReduceEstimate e = predict_allreduce(one, 8.0 * 1024 * 1024);
  ASSERT_EQ(e.algo, Algo::NVLS);
  EXPECT_EQ(e.why.limit, AllReduceEstimate::Why::Limit::NVLS_RATE);
  EXPECT_NEAR(e.why.fill, 2 * 4194304.0 / e.bandwidth, 1e-15);
  EXPECT_NE(explain_difference(e).find("pipeline fill"), std::string::npos);
  // One A100 node driven by one thread (nccl-tests -g 8), 8 B: the host's 8 x 5 us sets the time.
  auto a100 = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-a100"));
  NcclTopology g8 = topo_for(a100, 1);
  g8.gpus_per_process = 8;
  const AllReduceEstimate h = predict_allreduce(g8, 8);
  EXPECT_TRUE(h.why.host_bound);
  EXPECT_NEAR(h.time, 8 * kHostLaunchSeconds, 1e-15);
  EXPECT_NE(explain_difference(h).find("host bound 8 x 5.0 us"), std::string::npos);
  // Two DGX H100 nodes, 1 GiB: NVLS tree's bandwidth is the node's NVLS rate (above the NICs'
  // 8 x 50 GB/s on two nodes); four nodes: the NICs at 2 bytes per byte (item 7), 200 GB/s.
  const AllReduceEstimate t2 = predict_allreduce(topo_for(h100, 2), 1 << 30);
  ASSERT_EQ(t2.algo, Algo::NVLS_TREE);
  EXPECT_EQ(t2.why.limit, AllReduceEstimate::Why::Limit::NVLS_RATE);
  NcclSettings nvls_tree;
  nvls_tree.algos = {Algo::NVLS_TREE};
  const NcclTopology four = topo_for(h100, 4);
  const AllReduceEstimate t4 = predict_allreduce(four, 1 << 30, nvls_tree);
  EXPECT_EQ(t4.why.limit, AllReduceEstimate::Why::Limit::NICS);
  EXPECT_NEAR(t4.bandwidth, four.nics_per_node * four.nic_bw / 2, 1e-6 * t4.bandwidth);
}

// NCCL_MAX_CTAS (2.17+) caps every algorithm's channels, NVLS's included (nvls.cc). Fewer CTAs
// never give any (algorithm, protocol) more bandwidth than twice as many. (Its time may still
// fall: NVLS loops span channels x heads x chunk, so fewer channels fill the pipeline sooner where
// the NICs, not the channels, bound the bandwidth; e.g. dgx-b200 x4 at 1 GiB, 16 instead of 24
// channels: 63 us less fill.)
TEST(NcclConsistency, FewerCtasNeverGiveMoreBandwidth) {
  int checked = 0, lower = 0;
  for_each_point([&](const Preset& p, int nodes, const NcclTopology& topo, double bytes) {
    for (int ctas : {1, 2, 4, 8, 16, 32}) {
      NcclSettings more = p.settings, fewer = p.settings;
      more.max_ctas = 2 * ctas;
      fewer.max_ctas = ctas;
      const auto with_more = allreduce_candidates(topo, bytes, more);
      for (const auto& e : allreduce_candidates(topo, bytes, fewer)) {
        for (const auto& m : with_more) {
          if (m.algo != e.algo || m.proto != e.proto) continue;
          ++checked;
          if (e.bandwidth < m.bandwidth * (1 - kTol)) ++lower;
          EXPECT_LE(e.bandwidth, m.bandwidth * (1 + kTol))
              << where(p.name, nodes, bytes) << " " << to_string(e.algo) << "/" << to_string(e.proto)
              << " NCCL_MAX_CTAS=" << ctas << ": " << e.bandwidth / 1e9 << " GB/s > " << m.bandwidth / 1e9
              << " GB/s with " << 2 * ctas;
        }
      }
    }
  });
  std::printf(
      "[consistency] CTAs: %d candidates with NCCL_MAX_CTAS halved, %d of them slower in bandwidth, none faster\n",
      checked, lower);
}

// By hand, one DGX H100 node (NCCL's 16 NVLS channels reach the NVLS rate): NCCL_MAX_CTAS=8 runs
// NVLS on 8 channels at half that rate; NCCL_MIN_CTAS=24 runs 24 (at the same rate, not above it)
// and raises the ring/tree channels to 24; NCCL_MIN_NCHANNELS leaves NVLS alone (nvls.cc reads the
// CTAs only).
TEST(NcclConsistency, CtasBoundTheNvlsChannelsByHand) {
  const auto cat = ddpsim::test_support::source_catalog();
  const NcclTopology one = topo_for(cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-h100")), 1);
  NcclSettings nvls;
  nvls.algos = {Algo::NVLS};
  const AllReduceEstimate base = predict_allreduce(one, 1 << 30, nvls);
  ASSERT_EQ(base.nchannels, 16);
  NcclSettings eight = nvls;
  eight.max_ctas = 8;
  const AllReduceEstimate e8 = predict_allreduce(one, 1 << 30, eight);
  EXPECT_EQ(e8.nchannels, 8);
  EXPECT_NEAR(e8.bandwidth, base.bandwidth / 2, 1e-9 * base.bandwidth);
  EXPECT_EQ(tune_model(one, eight).comm_channels, 8);
  NcclSettings many = nvls;
  many.min_ctas = 24;
  const AllReduceEstimate e24 = predict_allreduce(one, 1 << 30, many);
  EXPECT_EQ(e24.nchannels, 24);
  EXPECT_NEAR(e24.bandwidth, base.bandwidth, 1e-9 * base.bandwidth);
  // The fill follows enqueue.cc's chunk rule for 1 GiB: 16 x 8 heads keep 128 KiB chunks (1 GiB is
  // not < 64 x 128 ops x 128 KiB), 24 x 8 shrink them to 64 KiB (1 GiB < 64 x 192 x 128 KiB):
  // two loops of 16 MiB against two of 12 MiB.
  EXPECT_NEAR(base.why.fill, 2 * 16.0 * 1048576 / base.bandwidth, 1e-15);
  EXPECT_NEAR(e24.why.fill, 2 * 12.0 * 1048576 / e24.bandwidth, 1e-15);
  EXPECT_EQ(tune_model(one, many).comm_channels, 24);
  NcclSettings minch = nvls;
  minch.min_channels = 24;
  EXPECT_EQ(predict_allreduce(one, 1 << 30, minch).nchannels, 16);
}

// `ddpsim run` keeps NCCL's eager floor under training.cuda_graphs (NcclTopology::cuda_graph is
// left unset there). That is right only if one process per GPU is never host-bound on one node,
// where a CUDA graph would drop the bound; across nodes the bound stays with or without a graph.
TEST(NcclConsistency, OneProcessPerGpuIsNeverHostBoundSoGraphsLeaveDdpAlone) {
  int checked = 0;
  for_each_point([&](const Preset& p, int nodes, const NcclTopology& topo, double bytes) {
    ASSERT_EQ(topo.gpus_per_process, 1);
    NcclTopology graph = topo;
    graph.cuda_graph = true;
    const auto eager = predict_allreduce(topo, bytes, p.settings);
    const auto replayed = predict_allreduce(graph, bytes, p.settings);
    EXPECT_FALSE(eager.why.host_bound) << p.name << " x" << nodes << " " << bytes << " B";
    EXPECT_EQ(eager.time, replayed.time) << p.name << " x" << nodes << " " << bytes << " B";
    ++checked;
  });
  EXPECT_GT(checked, 5000);
}
