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
       0.081},
      {"V100 SXM2 x8, NVLink cube mesh, NCCL 2.4.8", "dgx1-v100", "v100-sxm2-32gb", 1,
       "nccl-tests/v100-sxm2_1x8_nvlink_cube_mesh.txt", 0.102, 0.228},
      {"V100 PCIe x2", "azure-nc12s-v3", "v100-pcie-16gb", 1, "nccl-tests/azure-nc12s-v3_1x2_v100_pcie.txt", 0.040,
       0.166},
      {"A100 x8 + 4x100G EFA (p4d), NCCL 2.19.4 + aws-ofi-nccl 1.7.4, Ring forced, 1 GiB only", "p4d", "a100-sxm4-40gb",
       2, "published_nccl_tests/aws-p4d-2x8-efa-nccl2.19-ring.json", 0.028, -1, true},
      {"A100 x8 + 4x100G EFA (p4d), NCCL 2.8.3 + aws-ofi-nccl 1.1 (2020 stack)", "p4d", "a100-sxm4-40gb", 2,
       "nccl-tests/aws-p4d_2x8_a100_efa.txt", 1.72, 5.452},
      {"H100 SXM x8, NVSwitch (NVLS)", "dgx-h100", "h100-sxm", 1,
       "published_nccl_tests/h100-sxm-8x-dgx-nvswitch-1node.json", 0.026, 0.105},
      {"H100 x8 + 8x400G InfiniBand NDR, NCCL 2.26.2", "dgx-h100", "h100-sxm", 2,
       "published_nccl_tests/h100-sxm-2x8-hgx-ib-ndr-8x400g-default.json", 0.073, 0.091},
      {"H100 x8 + 8x400G InfiniBand NDR, NCCL 2.26.2", "dgx-h100", "h100-sxm", 4,
       "published_nccl_tests/h100-sxm-4x8-hgx-ib-ndr-8x400g-default-nccl2.26.json", 0.035, 0.107},
      {"H100 x8 + 8x400G InfiniBand (Voltage Park), NCCL 2.24.3", "dgx-h100", "h100-sxm", 4,
       "published_nccl_tests/h100-sxm-4x8-ib-8x400g-voltagepark-nccl2.24.json", 0.077, 0.112},
      {"H100 x8 + NDR with SHARP, CollNetChain forced", "dgx-h100-sharp", "h100-sxm", 8,
       "published_nccl_tests/h100-8x8-coreweave-sharp-collnetchain.json", 0.018, -1, true},
      {"A100 40GB x8 + 16x100G RoCE (OCI BM.GPU4.8)", "oci-bm-gpu4", "a100-sxm4-40gb", 2,
       "published_nccl_tests/a100-sxm4-40gb-2x8-oci-bm-gpu4-roce.json", 0.149, 0.533},
      {"RTX 4090 x8 PCIe, no P2P", "pcie-4090x8", "rtx-4090", 1,
       "published_nccl_tests/rtx4090-8x-pcie-no-p2p-epyc7542.json", 0.112, 0.077},
      {"GB200 NVL72, 1 rack", "gb200-nvl72", "gb200", 1, "published_nccl_tests/gb200-nvl72-1rack-coreweave.json", 0.134,
       -1},
      {"GB200 NVL72, 2 racks", "gb200-nvl72", "gb200", 2, "published_nccl_tests/gb200-nvl72-2racks-coreweave.json",
       0.110, -1},
      {"GB200 NVL72, 20 racks", "gb200-nvl72", "gb200", 20, "published_nccl_tests/gb200-nvl72-20racks-coreweave.json",
       1.71, -1},
  };
  return cases;
}

namespace validated_detail {

const ValidatedCase* nearest(int nodes, bool (*match)(const ValidatedCase&, const std::string&),
                             const std::string& key) {
  const ValidatedCase* best = nullptr;
  double best_d = 0;
  for (const ValidatedCase& c : validated_cases()) {
    if (!match(c, key)) continue;
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

const ValidatedCase* closest_validated(const std::string& cluster, const std::string& gpu, int nodes) {
  nodes = std::max(1, nodes);
  if (const ValidatedCase* c = nearest(
          nodes, [](const ValidatedCase& v, const std::string& k) { return k == v.preset; }, cluster))
    return c;
  return nearest(
      nodes, [](const ValidatedCase& v, const std::string& k) { return k == v.gpu && !v.forced; }, gpu);
}

std::string trust_line(const std::string& cluster, const std::string& gpu, int nodes) {
  const ValidatedCase* c = closest_validated(cluster, gpu, nodes);
  if (!c) return "no validated all_reduce_perf table for this cluster class (" + cluster + ", " + gpu + ")";
  char b[512];
  std::snprintf(b, sizeof b, "closest validated table: %s, %d node%s (%s): median |busbw error| %.1f %% at >= 1 MiB",
                c->cluster_class, c->nodes, c->nodes == 1 ? "" : "s", c->table, c->median_large * 100);
  std::string out = b;
  if (c->median_small >= 0) {
    std::snprintf(b, sizeof b, ", %.1f %% below", c->median_small * 100);
    out += b;
  }
  std::vector<std::string> differs;
  if (cluster != c->preset) differs.push_back("preset " + std::string(c->preset) + ", not " + cluster);
  if (nodes != c->nodes) differs.push_back(std::to_string(nodes) + " nodes asked");
  if (!differs.empty()) {
    out += " [differs:";
    for (size_t i = 0; i < differs.size(); ++i) out += (i ? "; " : " ") + differs[i];
    out += "]";
  }
  return out;
}

}  // namespace ddpsim::collectives
