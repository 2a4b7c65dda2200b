#include "collectives/validated.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ddpsim::collectives {

// Default-algorithm runs unless the class says otherwise. Medians as NcclDatasets_test computes
// them through the presets (NOTES.md "Per-dataset errors", "Held-out hardware", sessions 5-6 and
// "EFA through aws-ofi-nccl"); ValidatedTableIsWhatTheDatasetsGive holds this table to them.
const std::vector<ValidatedCase>& validated_cases() {
  static const std::vector<ValidatedCase> cases = {
      {"A100 SXM4 x8, NVSwitch", "dgx-a100", "a100-sxm4-80gb", 1, "nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt", 0.088,
       0.081, 0.224, 0.036},
      {"V100 SXM2 x8, NVLink cube mesh, NCCL 2.4.8", "dgx1-v100", "v100-sxm2-32gb", 1,
       "nccl-tests/v100-sxm2_1x8_nvlink_cube_mesh.txt", 0.102, 0.228, 0.102, 0.1},
      {"V100 PCIe x2", "azure-nc12s-v3", "v100-pcie-16gb", 1, "nccl-tests/azure-nc12s-v3_1x2_v100_pcie.txt", 0.040,
       0.166, 0.041, 0.038},
      {"A100 x8 + 4x100G EFA (p4d), NCCL 2.19.4 + aws-ofi-nccl 1.7.4, Ring forced, 1 GiB only", "p4d", "a100-sxm4-40gb",
       2, "published_nccl_tests/aws-p4d-2x8-efa-nccl2.19-ring.json", 0.028, -1, -1, 0.028, true},
      {"A100 x8 + 4x100G EFA (p4d), NCCL 2.8.3 + aws-ofi-nccl 1.1 (2020 stack)", "p4d", "a100-sxm4-40gb", 2,
       "nccl-tests/aws-p4d_2x8_a100_efa.txt", 1.72, 5.452, 2.45, 1.48},
      {"H100 SXM x8, NVSwitch (NVLS)", "dgx-h100", "h100-sxm", 1,
       "published_nccl_tests/h100-sxm-8x-dgx-nvswitch-1node.json", 0.026, 0.105, 0.048, 0.013},
      {"H100 x8 + 8x400G InfiniBand NDR, NCCL 2.26.2", "dgx-h100", "h100-sxm", 2,
       "published_nccl_tests/h100-sxm-2x8-hgx-ib-ndr-8x400g-default.json", 0.073, 0.091, 0.098, 0.072},
      {"H100 x8 + 8x400G InfiniBand NDR, NCCL 2.26.2", "dgx-h100", "h100-sxm", 4,
       "published_nccl_tests/h100-sxm-4x8-hgx-ib-ndr-8x400g-default-nccl2.26.json", 0.035, 0.107, 0.095, 0.027},
      {"H100 x8 + 8x400G InfiniBand (Voltage Park), NCCL 2.24.3", "dgx-h100", "h100-sxm", 4,
       "published_nccl_tests/h100-sxm-4x8-ib-8x400g-voltagepark-nccl2.24.json", 0.077, 0.112, 0.069, 0.078},
      {"H100 x8 + NDR with SHARP, CollNetChain forced", "dgx-h100-sharp", "h100-sxm", 8,
       "published_nccl_tests/h100-8x8-coreweave-sharp-collnetchain.json", 0.018, -1, -1, 0.018, true},
      {"A100 40GB x8 + 16x100G RoCE (OCI BM.GPU4.8)", "oci-bm-gpu4", "a100-sxm4-40gb", 2,
       "published_nccl_tests/a100-sxm4-40gb-2x8-oci-bm-gpu4-roce.json", 0.149, 0.533, 0.247, 0.127},
      {"RTX 4090 x8 PCIe, no P2P", "pcie-4090x8", "rtx-4090", 1,
       "published_nccl_tests/rtx4090-8x-pcie-no-p2p-epyc7542.json", 0.112, 0.077, 0.12, 0.037},
      {"GB200 NVL72, 1 rack", "gb200-nvl72", "gb200", 1, "published_nccl_tests/gb200-nvl72-1rack-coreweave.json", 0.134,
       -1, -1, 0.134},
      {"GB200 NVL72, 2 racks", "gb200-nvl72", "gb200", 2, "published_nccl_tests/gb200-nvl72-2racks-coreweave.json",
       0.110, -1, -1, 0.11},
      {"GB200 NVL72, 20 racks", "gb200-nvl72", "gb200", 20, "published_nccl_tests/gb200-nvl72-20racks-coreweave.json",
       1.71, -1, -1, 1.709},
      // The other collectives (NOTES.md "All-gather and reduce-scatter", "Broadcast"): one 8 x A100
      // machine's tables of each (microsoft/superbenchmark's fixture, -g 8) and one H100 node's
      // reduce-scatter with the ring forced.
      {"A100 SXM4 40GB x8, NVSwitch (superbenchmark fixture)", "dgx-a100", "a100-sxm4-40gb", 1,
       "nccl-tests/a100-sxm4-40gb_1x8_allgather_superbench.txt", 0.272, 0.133, 0.878, 0.102, false, Func::ALL_GATHER},
      {"A100 SXM4 40GB x8, NVSwitch (superbenchmark fixture)", "dgx-a100", "a100-sxm4-40gb", 1,
       "nccl-tests/a100-sxm4-40gb_1x8_reducescatter_superbench.txt", 0.159, 0.124, 0.913, 0.043, false,
       Func::REDUCE_SCATTER},
      {"A100 SXM4 40GB x8, NVSwitch (superbenchmark fixture)", "dgx-a100", "a100-sxm4-40gb", 1,
       "nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt", 0.107, 0.128, 0.54, 0.032, false, Func::BROADCAST},
      {"H100 SXM x8, NVSwitch, Ring forced, 128 MiB-4 GiB", "dgx-h100", "h100-sxm", 1,
       "nccl-tests/h100-sxm_1x8_reduce_scatter_ring.txt", 0.024, -1, -1, 0.024, true, Func::REDUCE_SCATTER},
  };
  return cases;
}

const char* size_class_label(SizeClass k) {
  switch (k) {
    case SizeClass::SMALL: return "below 1 MiB";
    case SizeClass::MID: return "at 1-64 MiB";
    case SizeClass::BIG: return "at >= 64 MiB";
  }
  return "?";
}

namespace validated_detail {

const ValidatedCase* nearest(int nodes, Func func, bool (*match)(const ValidatedCase&, const std::string&),
                             const std::string& key) {
  const ValidatedCase* best = nullptr;
  double best_d = 0;
  for (const ValidatedCase& c : validated_cases()) {
    if (c.func != func || !match(c, key)) continue;
    const double d = std::abs(std::log2(static_cast<double>(c.nodes)) - std::log2(static_cast<double>(nodes)));
    if (!best || d < best_d - 1e-12 || (std::abs(d - best_d) <= 1e-12 && c.nodes < best->nodes)) {
      best = &c;
      best_d = d;
    }
  }
  return best;
}

}  // namespace validated_detail
using validated_detail::nearest;

const ValidatedCase* closest_validated(const std::string& cluster, const std::string& gpu, int nodes, Func func) {
  nodes = std::max(1, nodes);
  if (const ValidatedCase* c = nearest(
          nodes, func, [](const ValidatedCase& v, const std::string& k) { return k == v.preset; }, cluster))
    return c;
  return nearest(
      nodes, func, [](const ValidatedCase& v, const std::string& k) { return k == v.gpu && !v.forced; }, gpu);
}

double held_out_error(const std::string& net_plugin, int nodes) {
  // Issue 24's held-out public all_reduce_perf tables, median |busbw error| at sizes >= 1 MiB
  // against the model of the time (the tables are not in this repository; the figures are the
  // issue's):
  // - H100 over 400G InfiniBand: 6-11 % at 2-4 nodes, 16-24 % at 8 nodes; 128 nodes with the ring
  //   forced 33 % (there the model was too slow: 280 vs 367 GB/s);
  // - H100 over EFA (p5 class, 32 EFA NICs per node): 11 % at 2 nodes, 25 % at 4, 38 % at 8, 59 % at
  //   16, 124 % at 32 (the model too fast; measured before the aws-ofi-nccl plugin was modelled,
  //   which lowered the prediction at 32 nodes and 32-512 MiB by 1.4-1.7x: the current model's
  //   error there is not measured);
  // - A100 over EFA (p4dn class) with CollNet / plugin settings at 2-4 nodes: 31-37 %.
  // The worst figure at each measured node count, linear in log2(nodes) between them, flat beyond.
  struct Point {
    double nodes, error;
  };
  static const std::vector<Point> infiniband = {{2, 0.11}, {4, 0.11}, {8, 0.24}, {128, 0.33}};
  static const std::vector<Point> efa_p5 = {{2, 0.11}, {4, 0.25}, {8, 0.38}, {16, 0.59}, {32, 1.24}};
  static const std::vector<Point> efa_p4d = {{2, 0.37}, {4, 0.37}, {8, 0.38}, {16, 0.59}, {32, 1.24}};
  const bool efa = net_plugin.rfind("aws-ofi-nccl", 0) == 0;
  const std::vector<Point>& t = !efa ? infiniband : net_plugin == "aws-ofi-nccl/p4d" ? efa_p4d : efa_p5;
  const double n = std::max(1, nodes);
  if (n <= t.front().nodes) return t.front().error;
  for (size_t i = 1; i < t.size(); ++i)
    if (n <= t[i].nodes) {
      const double f = (std::log2(n) - std::log2(t[i - 1].nodes)) / (std::log2(t[i].nodes) - std::log2(t[i - 1].nodes));
      return t[i - 1].error + f * (t[i].error - t[i - 1].error);
    }
  return t.back().error;
}

namespace {

// A table's medians by size class (large, small, mid, big), each falling back to the >= 1 MiB one
// where the table has no rows of that class.
struct Bins {
  double large = 0, small = 0, mid = 0, big = 0;
};
Bins bins_of(const ValidatedCase& c) {
  const auto or_large = [&](double v) { return v >= 0 ? v : c.median_large; };
  return {c.median_large, or_large(c.median_small), or_large(c.median_mid), or_large(c.median_big)};
}
Bins max_of(const Bins& a, const Bins& b) {
  return {std::max(a.large, b.large), std::max(a.small, b.small), std::max(a.mid, b.mid), std::max(a.big, b.big)};
}

}  // namespace

Trust trust(const std::string& cluster, const std::string& gpu, int nodes, const std::string& net_plugin, Func func) {
  Trust t;
  t.func = func;
  t.table = closest_validated(cluster, gpu, nodes, func);
  Bins b;
  if (t.table) {
    b = bins_of(*t.table);
  } else if (func != Func::ALL_REDUCE) {
    // No table of this collective for the cluster class: the all-reduce's figures here, or the
    // collective's worst one-node table where that is worse.
    const Trust a = trust(cluster, gpu, nodes, net_plugin, Func::ALL_REDUCE);
    t.fallback = a.table;
    b = {a.base, a.base_small, a.base_mid, a.base_big};
    for (const auto& k : validated_cases())
      if (k.func == func && k.nodes == 1) {
        if (!t.worst || k.median_large > t.worst->median_large) t.worst = &k;
        b = max_of(b, bins_of(k));
      }
  } else {
    for (const auto& k : validated_cases())
      if (k.func == Func::ALL_REDUCE && k.nodes == 1) b = max_of(b, bins_of(k));
  }
  t.base = b.large;
  t.base_small = b.small;
  t.base_mid = b.mid;
  t.base_big = b.big;
  // The held-out growth applies from two nodes on where the run leaves the table: another preset
  // (its NICs, fabric or plugin were not the table's) or more nodes than it had.
  t.leaves = !t.table || cluster != t.table->preset || nodes > t.table->nodes;
  t.grown = nodes >= 2 && t.leaves ? held_out_error(net_plugin, nodes) : 0;
  t.error = std::max(t.base, t.grown);
  t.error_small = std::max(t.base_small, t.grown);
  t.error_mid = std::max(t.base_mid, t.grown);
  t.error_big = std::max(t.base_big, t.grown);
  if (t.grown > t.base) {
    char b[512];
    std::snprintf(b, sizeof b,
                  "%d nodes%s: held-out tables measured %.0f %% there (%s; issue 24, not in this repository)", nodes,
                  t.table && cluster != t.table->preset ? " of another preset" : "", 100 * t.grown,
                  net_plugin.rfind("aws-ofi-nccl", 0) == 0
                      ? "EFA: p5 11/25/38/59/124 % at 2/4/8/16/32 nodes, p4dn 31-37 % at 2-4, before the plugin was "
                        "modelled"
                      : "InfiniBand: 6-11 % at 2-4 nodes, 16-24 % at 8, 33 % at 128 with the ring forced");
    t.held_out = b;
  }
  return t;
}

namespace {

// "closest validated table: A100 ..., 1 node (file): median |busbw error| 8.8 % at >= 1 MiB, 8.1 %
// below [differs: ...]"
std::string table_words(const ValidatedCase& c, const std::string& cluster, int nodes) {
  char b[512];
  std::snprintf(b, sizeof b, "closest validated table: %s, %d node%s (%s): median |busbw error| %.1f %% at >= 1 MiB",
                c.cluster_class, c.nodes, c.nodes == 1 ? "" : "s", c.table, c.median_large * 100);
  std::string out = b;
  if (c.median_small >= 0) {
    std::snprintf(b, sizeof b, ", %.1f %% below", c.median_small * 100);
    out += b;
  }
  std::vector<std::string> differs;
  if (cluster != c.preset) differs.push_back("preset " + std::string(c.preset) + ", not " + cluster);
  if (nodes != c.nodes) differs.push_back(std::to_string(nodes) + " nodes asked");
  if (!differs.empty()) {
    out += " [differs:";
    for (size_t i = 0; i < differs.size(); ++i) out += (i ? "; " : " ") + differs[i];
    out += "]";
  }
  return out;
}

}  // namespace

std::vector<std::string> trust_parts(const std::string& cluster, const std::string& gpu, int nodes,
                                     const std::string& net_plugin, Func func, bool allreduce_above) {
  const Trust t = trust(cluster, gpu, nodes, net_plugin, func);
  std::vector<std::string> out;
  if (t.table) {
    out.push_back(table_words(*t.table, cluster, nodes));
  } else if (func != Func::ALL_REDUCE) {
    char b[512];
    out.push_back(std::string("no validated ") + nccl_tests_binary(func) + " table for this cluster class (" + cluster +
                  ", " + gpu + ")");
    if (t.worst) {
      std::snprintf(b, sizeof b, "the worst one-node %s table's median |busbw error| stands in where larger: %s (%s), ",
                    nccl_tests_binary(func), t.worst->cluster_class, t.worst->table);
      std::string w = b;
      std::snprintf(b, sizeof b, "%.1f %% at >= 1 MiB", 100 * t.worst->median_large);
      w += b;
      if (t.worst->median_small >= 0) {
        std::snprintf(b, sizeof b, ", %.1f %% below", 100 * t.worst->median_small);
        w += b;
      }
      out.push_back(w);
    }
    if (allreduce_above) {
      out.push_back("beside the all-reduce's: all_reduce_perf's above");
    } else if (t.fallback) {
      out.push_back("beside the all-reduce's: " + table_words(*t.fallback, cluster, nodes));
    } else {
      std::snprintf(b, sizeof b,
                    "beside the all-reduce's: no validated all_reduce_perf table either (the worst one-node one's "
                    "%.1f %%)",
                    100 * trust(cluster, gpu, nodes, "", Func::ALL_REDUCE).base);
      out.push_back(b);
    }
  } else {
    out.push_back("no validated all_reduce_perf table for this cluster class (" + cluster + ", " + gpu + ")");
  }
  if (!t.held_out.empty()) out.push_back(t.held_out);
  return out;
}

std::string join_trust_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string trust_line(const std::string& cluster, const std::string& gpu, int nodes, const std::string& net_plugin,
                       Func func) {
  return join_trust_parts(trust_parts(cluster, gpu, nodes, net_plugin, func));
}

}  // namespace ddpsim::collectives
