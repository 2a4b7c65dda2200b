// Consistency properties of the NCCL model over every bundled cluster preset (at its own GPUs per
// node, and at 1, 2 and 4 GPUs per node: sweep_presets) x
// {1, 2, 4, ..., 1024} nodes x every collective the model times: all-reduce, all-gather,
// reduce-scatter and broadcast (NCCL's pick, predict_collective) at 8 B - 8 GiB (powers of two;
// all-gather / reduce-scatter from 16 B per rank, nccl-tests' smallest), and broadcast under the
// plain ring model (CollectiveModel::broadcast). Closed form, no SimGrid: the four property tests took 1.6 s in
// Release on the loaded 2-core machine (P1 0.13 s, P2 0.13 s, P3 0.33 s, broadcast 1.0 s), so
// the full grid stays, far below the 60 s the sweep may take.
//
// Properties of the NCCL model (docs/accuracy.md), each with the exceptions the model allows and why:
//  P1 pick consistency: the time NCCL's pick achieves is within kPickSlack (10 %) of the best
//     achieved time over the candidates NCCL weighs, except where a named mechanism that NCCL's
//     estimate leaves out applies (exceptions A-E, G, H, J, K in p1_exception, counted per class and
//     printed).
//  P2 node doubling: for a fixed size (NCCL's nBytes: the all-gather's output, the
//     reduce-scatter's input, as FSDP's unit) the achieved time at 2N nodes is never below the best
//     candidate's achieved time at N (it can be below NCCL's pick at N only where P1 lets a
//     mis-pick through; the count is printed).
//  P3 adding latency (net_latency +3 us) or removing bandwidth (half the NIC or NVLink bandwidth)
//     never makes a collective faster than the best candidate was before (same caveat).
// sim/collectives/NOTES.md "Consistency over every preset and collective" has the counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "collectives/collective_model.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "support/builders.hpp"

using namespace ddpsim::collectives;

namespace {

constexpr double kPickSlack = 0.10;  // P1: within 10 % of the best candidate
constexpr double kTol = 1e-9;        // relative: float noise only

// The functions NCCL's model picks for (predict_collective); the ring model's broadcast is below.
constexpr std::array<Func, 4> kFuncs = {Func::ALL_REDUCE, Func::ALL_GATHER, Func::REDUCE_SCATTER, Func::BROADCAST};

std::vector<double> sizes() {
  std::vector<double> v;
  for (double b = 8; b <= 8.0 * 1024 * 1024 * 1024; b *= 2) v.push_back(b);
  return v;
}

// A size NCCL runs `func` at on `nranks` ranks: all-gather / reduce-scatter move nBytes / nranks
// per rank, at least 16 B (nccl-tests' smallest, validate::nccl_tests_size).
bool runs_at(Func func, double bytes, int nranks) {
  return func == Func::ALL_REDUCE || func == Func::BROADCAST || bytes >= 16.0 * nranks;
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

// The property sweep's presets: every one above at its own GPUs per node (2, 8 or 72), and again
// at 1, 2 and 4 GPUs per node where it has more (`run --gpus-per-node`; aws-ofi-nccl's region
// tuner has its own tables at 1 and 2 ranks per node, net_plugin_regions.cpp), the rack-scale
// presets (gb200/gb300-nvl72) and aws-p5 / aws-p5en at 4 GPUs per node included. Both were left
// out while the model let a node's GPUs reach every NIC of it (the rack's 72 NICs for 1-4 GPUs)
// and grouped aws-p5 / aws-p5en's rails per rank (8 per GPU at 4 GPUs per node) instead of per
// GPU; nccl_model.cpp nic_reach now gives the GPUs their own NICs only, each GPU's through its
// PCIe path (inter_node.nics_per_gpu, pcie_link).
std::vector<Preset> sweep_presets() {
  std::vector<Preset> out = presets();
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    for (int g : {1, 2, 4}) {
      if (g >= out[i].cluster.gpus_per_node) continue;
      Preset p = out[i];
      p.cluster.gpus_per_node = g;
      p.name.append("/").append(std::to_string(g)).append("gpn");
      out.push_back(p);
    }
  }
  return out;
}

// A preset without NICs cannot span nodes.
bool can_span(const ddpsim::config::ClusterSpec& c) { return c.inter_link.has_value() && c.nics_per_node > 0; }

NcclTopology topo_for(ddpsim::config::ClusterSpec c, int nodes) {
  c.nodes = nodes;
  return nccl_topology(c);
}

std::string where(const std::string& preset, int nodes, double bytes) {
  return preset + " x" + std::to_string(nodes) + " nodes, " + std::to_string(static_cast<long long>(bytes)) + " B";
}

std::string where(Func func, const std::string& preset, int nodes, double bytes) {
  return to_string(func) + " " + where(preset, nodes, bytes);
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

// Every (sweep preset, node count it can span) with at least two ranks.
template <typename Fn>
void for_each_sweep_topology(Fn&& fn) {
  for (const auto& p : sweep_presets()) {
    for (int nodes : node_counts()) {
      if (nodes > 1 && !can_span(p.cluster)) continue;
      const NcclTopology topo = topo_for(p.cluster, nodes);
      if (topo.nranks >= 2) fn(p, nodes, topo);
    }
  }
}

const AllReduceEstimate& fastest(const std::vector<AllReduceEstimate>& c) {
  const AllReduceEstimate* best = &c.front();
  for (const auto& e : c)
    if (e.time < best->time) best = &e;
  return *best;
}

// The named exception (a letter) under which NCCL's pick (c.front()) may achieve more than the
// slack above the best candidate, or 0 where none applies.
char p1_exception(Func func, const NcclTopology& topo, const std::vector<AllReduceEstimate>& c,
                  const NcclSettings& settings) {
  const AllReduceEstimate& pick = c.front();
  const AllReduceEstimate& best_e = fastest(c);
  const NcclTuning tuning = tune_model(topo, settings, func);
  // Exception A (NCCL itself): enqueue.cc topoGetAlgoInfo estimates every candidate with all
  // channels and shrinks the channel count only after the pick, so a pick that runs on
  // fewer channels is slower than NCCL thought while the others are unaffected.
  if ((pick.algo == Algo::RING || pick.algo == Algo::TREE) && pick.nchannels < tuning.comm_channels) return 'A';
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
  if (nvls_pick &&
      pick.latency - tuning.latency[static_cast<int>(pick.algo)][static_cast<int>(pick.proto)] > kPickSlack * pick.time)
    return 'B';
  // Exception C (NCCL's formula leaves it out): a Simple ring pays the per-slice fence and
  // flag of prims_simple.h on every hop (item 1), which bends the measured A100 NVSwitch
  // curve (shared log, 8.8 % median) but not NCCL's affine estimate.
  if (pick.algo == Algo::RING && pick.proto == Proto::SIMPLE) return 'C';
  // Exception D (NCCL's formula leaves it out): a tree across nodes is held to the NICs'
  // line rate (item 7, 2 bytes per byte on an inner node of a double binary tree beyond two
  // nodes); NCCL's tree figure ignores the NIC count. The same for an NVLS tree, whose heads
  // each cross through one NIC (why.limit NICS): at 4 GPUs per node on an 8-NIC node four heads
  // carry it (gcp-a3-mega / dgx-b200 at 4 GPUs per node, where NCCL picks the NVLS tree on its
  // 4 heads x bwInter estimate and the NICs give it half of that beyond two nodes).
  const double nic_cap = topo.nics_per_node * topo.nic_bw / (topo.nnodes <= 2 ? 1.0 : 2.0);
  if (pick.algo == Algo::TREE && topo.nnodes > 1 && pick.bandwidth >= 0.999 * nic_cap) return 'D';
  if (pick.algo == Algo::NVLS_TREE && pick.why.limit == AllReduceEstimate::Why::Limit::NICS) return 'D';
  // Exception E (NCCL's estimate adds what the model replaces): the best candidate is a
  // Simple ring that achieves more than the slack below NCCL's own estimate of it. Across
  // nodes tuning.cc multiplies a Simple ring's latency by its "plateau effect of ring"
  // factor (2.8+: 1.9 from nRanks/16 x 64 KiB; before 1.4, 1.9 on Volta), an empirical
  // correction the model's achieved time does not carry: it charges item 1's slice
  // schedule instead, with item 3's inter-node hop share. NCCL then passes over the ring
  // (azure-nc12s-v3, 2 x V100 PCIe per node over 25 GbE, across nodes at 128 KiB - 2 MiB).
  if (best_e.algo == Algo::RING && best_e.proto == Proto::SIMPLE &&
      best_e.time < (1 - kPickSlack) * best_e.nccl_model_time)
    return 'E';
  // Exception G (NCCL's pick, explained by its tuner plugin): aws-ofi-nccl's region tuner
  // (src/tuner/nccl_ofi_regions.cpp, p5/p5en presets beyond two nodes) sets its polygon's
  // (algorithm, protocol) to cost 0, whatever NCCL or the model estimates for the others.
  if (pick.why.plugin_pick) return 'G';
  // Exception H (NCCL's pick, explained by its net plugin): aws-ofi-nccl reports a network
  // latency (platform-aws.cpp: 75 us p4d/p5, 35 us p5en) "because NCCL's internal tuner
  // choices work better with this value"; tuning.cc adds it to every inter-node step, twice
  // for Simple, so it weighs on the best candidate more than on the pick. It is a tuner
  // input, not part of the achieved time (why.net_step_latency).
  if (best_e.why.net_step_latency < pick.why.net_step_latency - 1e-9) return 'H';
  // Exception J (NCCL's estimate, below what the model lets it achieve): the best candidate is an
  // NVLS tree that achieves more than the slack above NCCL's own estimate of it. At 2 and 4 GPUs
  // per node on 2 H100 nodes the GPUs reach their own NICs only (nccl_model.cpp nic_reach), which
  // hold the ring to 1.5 bytes per byte and the NVLS tree to 1 (item 7); NCCL's NVLS-tree figure
  // (tuning.cc) stays below those NICs (2 x 2 H100: 68 GB/s against 96), so NCCL runs Tree/Simple
  // (70 GB/s) where the model's NVLS tree, bounded by the heads' NICs and the node's NVLS rate
  // only, gives 96. No table measures NVLS tree below 8 GPUs per node.
  if (best_e.algo == Algo::NVLS_TREE && best_e.time < (1 - kPickSlack) * best_e.nccl_model_time) return 'J';
  // Exception K (NCCL's formula leaves it out): a broadcast's latency in tuning.cc is baseLat + one
  // hwLat when every channel runs the same ring ("waiting for proper chunk modeling"), whatever
  // the rank count, while its chunks cross nRanks-1 hops (the achieved time, ring_hops). Simple's
  // hwLat is the largest, so NCCL picks Simple below the sizes where its hops pay off and LL or
  // LL128 achieve less (aws-p5 x4, 8 MiB: Simple 212 us, LL128 172 us).
  if (func == Func::BROADCAST && pick.why.ring_hops) return 'K';
  return 0;
}

// The named exception (a letter) under which `e`, NCCL's pick on worse hardware (P3) or on twice
// the nodes (P2), may achieve less than the best of `before`, the candidates before; 0 where none
// applies. Both classes are NCCL choosing a different channel count for the (algorithm, protocol)
// it runs:
//  F (NCCL's NVLS channels, the model's fill): NVLS / NVLS tree runs on another number of NVLS
//    channels than before and the pipeline fill (item 9: (stages - 1) loops of nvlsChannels x
//    heads x chunk) shrinks with them. From 2.30.3 nvls.cc ncclNvlsTreeSm100Tuning
//    (nccl_model.cpp nvls_tuning) sets Blackwell's NVLS channels by node count and NIC speed: 32
//    on 2 nodes; from 4 nodes 24 with 48-96 GB/s NICs, 32 with >= 96 GB/s and more than 8 GPUs
//    per node. NCCL's own estimate does not change, and the fill that makes the difference is not
//    validated on NVL72 (NOTES.md, session 5). Seen on the NVL72 presets only: gb200-nvl72 x4
//    beats its 2-rack best at 32 MiB - 8 GiB (32 -> 24 channels); half the NIC bandwidth on
//    gb300-nvl72 (100 -> 50 GB/s) goes from 32 to 24 channels from 4 racks on. The same rule
//    sets the NVLS chunk: at <= 8 GPUs per node >= 96 GB/s NICs take 256 KiB chunks, 48-96 GB/s
//    128 KiB (NVLS-tree chunk 64 KiB), so gb300-nvl72 run at 2 or 4 GPUs per node with half its
//    NIC bandwidth keeps 24 channels and fills sooner (8 nodes x 4 GPUs, 8 GiB: 786 -> 197 us).
//    Named wherever the fill shrank (worse hardware lowers the bandwidth, which lengthens the
//    fill; only a shorter loop, channels x heads x chunk, shortens it).
//  I (NCCL's own estimate says so): the pair runs on more channels than before and NCCL's own
//    estimate of it (nccl_model_time) fell too. search.cc ncclTopoCompute keeps the graph with
//    the largest nChannels x speed, so a slower NIC fits more channels of a lower speed (gb200-nvl72
//    with half its 400 Gb/s NICs: 16 -> 30 graph channels, 32 -> 60 after ncclTopoPostset's
//    doubling), and tuning.cc ncclTopoTuneModel (v2.30.3: busBw = nChannels x bw, then capped at
//    nChannels x perChMaxRingLL128Bw / perChMaxTreeBw / perChMaxTreeLL128Bw) lets Ring LL128 and
//    the trees keep more of it: NCCL itself estimates the slower NIC faster (gb200-nvl72 x1024,
//    32 MiB: Tree/LL128 122 -> 230 GB/s).
char p23_exception(Func func, const AllReduceEstimate& e, const std::vector<AllReduceEstimate>& before) {
  const AllReduceEstimate* same = nullptr;
  for (const auto& b : before)
    if (b.algo == e.algo && b.proto == e.proto) same = &b;
  if (!same) return 0;
  const bool nvls = e.algo == Algo::NVLS || e.algo == Algo::NVLS_TREE;
  if (nvls && e.why.fill < same->why.fill) return 'F';
  if (e.nchannels > same->nchannels && e.nccl_model_time < same->nccl_model_time) return 'I';
  // L (NCCL's own estimate says so, broadcast): the ring's graph is faster than before in NCCL's
  // own figures (nChannels x speed) and a broadcast's algorithm bandwidth is its bus bandwidth, so
  // it shows what an all-reduce's 2(N-1)/N hides. One H100 node's ring graph is 12 x 30 = 360 GB/s
  // (sm90 intra speeds: a perfect 6 x 60, duplicated); across nodes the graph takes the inter-node
  // speeds, 8 x 48 = 384 GB/s on aws-p5's 400 GB/s of EFA, so the 2-node broadcast of 1 GiB is 1.6 %
  // faster than one node's; the same where half the NIC bandwidth lets more, slower channels fit.
  if (func == Func::BROADCAST && e.nccl_model_time < same->nccl_model_time) return 'L';
  // M (the model's per-chunk sync, broadcast): a slower NIC fits more, slower channels into the
  // graph (gb200-nvl72 with half its NIC bandwidth: 16 x 45.1 -> 30 x 24 GB/s), each channel's part
  // is cut into fewer 512 KiB chunks, and each chunk after a channel's first pays one Simple slice
  // sync in series (estimate(), broadcast): 4 GiB over 2 racks 1383 -> 978 us of latency, while
  // NCCL's own estimate barely moves (5974 -> 5988 us).
  if (func == Func::BROADCAST && e.nchannels > same->nchannels && e.latency < same->latency) return 'M';
  return 0;
}

// Counts of one property for one function.
struct Tally {
  int points = 0, pick_faster = 0;
  std::map<char, int> excepted;        // by exception class
  std::map<char, double> most_beaten;  // P2/P3: the largest gain below the best before, by class
  double worst = 0;
  std::string worst_where;
  void gap(double g, const std::string& at) {
    if (g > worst) {
      worst = g;
      worst_where = at;
    }
  }
  // P2/P3: a point `gain` below the best before, under exception class x (0: none, a failure).
  void below_best(char x, double gain, const std::string& at) {
    if (!x) return;
    ++excepted[x];
    most_beaten[x] = std::max(most_beaten[x], gain);
    gap(gain, std::string(1, x) + ": " + at);
  }
  void print_below_best(const char* property, Func func, const char* points, const char* before) const {
    std::printf(
        "[consistency] %s %s: %d %s, %d faster than NCCL's pick %s, %s faster than its best under a named "
        "exception (most %.1f %% at %s)\n",
        property, to_string(func).c_str(), this->points, points, pick_faster, before, exceptions().c_str(), 100 * worst,
        worst_where.empty() ? "-" : worst_where.c_str());
  }
  std::string exceptions() const {
    std::string s;
    int total = 0;
    for (const auto& [k, n] : excepted) {
      s += (s.empty() ? "" : ", ") + std::string(1, k) + " " + std::to_string(n);
      if (const auto it = most_beaten.find(k); it != most_beaten.end()) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " up to %.1f %%", 100 * it->second);
        s += pct;
      }
      total += n;
    }
    return std::to_string(total) + (s.empty() ? "" : " (" + s + ")");
  }
};

}  // namespace

TEST(NcclConsistency, PickAchievesNearTheBestCandidate) {
  for (Func func : kFuncs) {
    Tally t;
    for_each_sweep_topology([&](const Preset& p, int nodes, const NcclTopology& topo) {
      for (double bytes : sizes()) {
        if (!runs_at(func, bytes, topo.nranks)) continue;
        const auto c = collective_candidates(func, topo, bytes, p.settings);
        ASSERT_FALSE(c.empty()) << where(func, p.name, nodes, bytes);
        const double best = fastest(c).time;
        const double gap = c.front().time / best - 1;
        ++t.points;
        if (const char x = p1_exception(func, topo, c, p.settings)) {
          ++t.excepted[x];
          continue;
        }
        t.gap(gap, where(func, p.name, nodes, bytes) + " pick " + to_string(c.front().algo) + "/" +
                       to_string(c.front().proto));
        EXPECT_LE(gap, kPickSlack) << where(func, p.name, nodes, bytes) << ": NCCL picks " << to_string(c.front().algo)
                                   << "/" << to_string(c.front().proto) << " achieving " << c.front().time * 1e6
                                   << " us, best candidate " << best * 1e6 << " us";
      }
    });
    std::printf("[consistency] P1 %s: %d points, %s excepted, worst remaining pick gap %.1f %% at %s\n",
                to_string(func).c_str(), t.points, t.exceptions().c_str(), 100 * t.worst,
                t.worst_where.empty() ? "(none: the pick is the best)" : t.worst_where.c_str());
  }
}

TEST(NcclConsistency, DoublingNodesNeverBeatsTheBestAtHalfTheNodes) {
  // The pick at 2N may beat the pick at N only by switching to something that would already have
  // been at least as fast at N: the achieved time at 2N is never below the best candidate's
  // achieved time at N. (Where NCCL's pick at N is not the fastest candidate, P1 bounds the gap.)
  for (Func func : kFuncs) {
    Tally t;
    for (const auto& p : sweep_presets()) {
      if (!can_span(p.cluster)) continue;
      for (double bytes : sizes()) {
        double prev_best = 0, prev_pick = 0;
        std::vector<AllReduceEstimate> prev;
        for (int nodes : node_counts()) {
          const NcclTopology topo = topo_for(p.cluster, nodes);
          if (topo.nranks < 2) continue;
          if (!runs_at(func, bytes, topo.nranks)) break;  // fewer bytes per rank from here on
          const auto c = collective_candidates(func, topo, bytes, p.settings);
          const double best = fastest(c).time;
          if (!prev.empty()) {
            ++t.points;
            if (c.front().time < prev_pick * (1 - kTol)) ++t.pick_faster;
            const char x = c.front().time < prev_best * (1 - kTol) ? p23_exception(func, c.front(), prev) : 0;
            t.below_best(x, 1 - c.front().time / prev_best, where(func, p.name, nodes, bytes));
            if (!x) {
              EXPECT_GE(c.front().time, prev_best * (1 - kTol))
                  << where(func, p.name, nodes, bytes) << ": " << c.front().time * 1e6 << " us ("
                  << to_string(c.front().algo) << "/" << to_string(c.front().proto) << ") < best " << prev_best * 1e6
                  << " us at half the nodes";
            }
          }
          prev_best = best;
          prev_pick = c.front().time;
          prev = c;
        }
      }
    }
    t.print_below_best("P2", func, "doublings", "at half the nodes");
  }
}

TEST(NcclConsistency, MoreLatencyOrLessBandwidthNeverBeatsTheBestBefore) {
  for (Func func : kFuncs) {
    Tally t;
    for_each_sweep_topology([&](const Preset& p, int nodes, const NcclTopology& base) {
      std::vector<std::pair<std::string, NcclTopology>> worse;
      if (nodes > 1) {
        NcclTopology w = base;
        w.net_latency += 3e-6;
        worse.emplace_back("+3 us net_latency", w);
        w = base;
        w.nic_bw *= 0.5;
        worse.emplace_back("half NIC bandwidth", w);
      }
      if (base.nranks / base.nnodes > 1) {
        NcclTopology w = base;
        w.intra_bw *= 0.5;
        if (w.intra_peer_bw > 0) w.intra_peer_bw *= 0.5;
        worse.emplace_back("half intra-node bandwidth", w);
      }
      for (double bytes : sizes()) {
        if (!runs_at(func, bytes, base.nranks)) continue;
        // Worse hardware may move NCCL's pick to a candidate that was already faster (a pick P1
        // lets through), never below the best candidate on the better hardware.
        const auto c0 = collective_candidates(func, base, bytes, p.settings);
        const double best0 = fastest(c0).time, pick0 = c0.front().time;
        for (const auto& [what, w] : worse) {
          ++t.points;
          const AllReduceEstimate e = predict_collective(func, w, bytes, p.settings);
          if (e.time < pick0 * (1 - kTol)) ++t.pick_faster;
          const char x = e.time < best0 * (1 - kTol) ? p23_exception(func, e, c0) : 0;
          t.below_best(x, 1 - e.time / best0, where(func, p.name, nodes, bytes) + " with " + what);
          if (!x) {
            EXPECT_GE(e.time, best0 * (1 - kTol)) << where(func, p.name, nodes, bytes) << " with " << what << ": "
                                                  << e.time * 1e6 << " us < best " << best0 * 1e6 << " us";
          }
        }
      }
    });
    t.print_below_best("P3", func, "perturbations", "before");
  }
}

// Broadcast under the plain ring model (CollectiveModel::broadcast with `model: ring`: one pass of
// the ring on the catalog's per-hop figures; under NCCL's model it is in kFuncs above): P2 and P3
// on the cluster's links.
TEST(NcclConsistency, RingModelBroadcastNeverGetsFasterWithMoreNodesOrWorseLinks) {
  ddpsim::config::CollectiveSettings nccl;
  nccl.model = ddpsim::config::CollectiveModelKind::RING;
  auto time = [&](const ddpsim::config::ClusterSpec& c, double bytes) {
    return CollectiveModel(c, nccl).broadcast(bytes).total();
  };
  int doublings = 0, perturbations = 0;
  for (const auto& p : sweep_presets()) {
    for (double bytes : sizes()) {
      double prev = 0;
      for (int nodes : node_counts()) {
        if (nodes > 1 && !can_span(p.cluster)) break;
        auto c = p.cluster;
        c.nodes = nodes;
        if (c.world_size() < 2) continue;
        const double now = time(c, bytes);
        if (prev > 0) {
          ++doublings;
          EXPECT_GE(now, prev * (1 - kTol)) << "Broadcast " << where(p.name, nodes, bytes);
        }
        prev = now;
        std::vector<std::pair<std::string, ddpsim::config::ClusterSpec>> worse;
        if (nodes > 1) {
          auto w = c;
          w.inter_link->latency += 3e-6;
          worse.emplace_back("+3 us inter-node latency", w);
          w = c;
          w.inter_link->bandwidth *= 0.5;
          worse.emplace_back("half NIC bandwidth", w);
        }
        if (c.gpus_per_node > 1) {
          auto w = c;
          w.intra_link.bandwidth *= 0.5;
          worse.emplace_back("half intra-node bandwidth", w);
        }
        for (const auto& [what, w] : worse) {
          ++perturbations;
          EXPECT_GE(time(w, bytes), now * (1 - kTol))
              << "Broadcast " << where(p.name, nodes, bytes) << " with " << what;
        }
      }
    }
  }
  std::printf("[consistency] P2 Broadcast: %d doublings; P3 Broadcast: %d perturbations\n", doublings, perturbations);
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
