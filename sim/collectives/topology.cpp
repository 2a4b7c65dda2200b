#include "collectives/topology.hpp"

namespace ddpsim::collectives {

NcclTopology nccl_topology(const config::ClusterSpec& c) {
  NcclTopology t;
  t.nranks = c.world_size();
  t.nnodes = c.nodes;
  switch (c.gpu.arch) {
    case config::GpuArch::VOLTA: t.arch = Arch::VOLTA; break;
    case config::GpuArch::AMPERE: t.arch = Arch::AMPERE; break;
    case config::GpuArch::ADA: t.arch = Arch::ADA; break;
    case config::GpuArch::HOPPER: t.arch = Arch::HOPPER; break;
    case config::GpuArch::BLACKWELL: t.arch = Arch::BLACKWELL; break;
  }
  if (c.gpu.sm_count > 0) t.sm_count = c.gpu.sm_count;
  t.intra_class = c.fabric == config::IntraFabric::PCIE ? LinkClass::PCI : LinkClass::NVLINK;
  t.intra_bw = c.intra_bandwidth();
  if (c.fabric == config::IntraFabric::NVLINK_MESH && c.peer_links > 0)
    t.intra_peer_bw = c.intra_link.bandwidth * c.peer_links;
  t.nvswitch = c.fabric == config::IntraFabric::NVSWITCH;
  t.nvls = c.nvls.value_or((c.gpu.arch == config::GpuArch::HOPPER || c.gpu.arch == config::GpuArch::BLACKWELL) &&
                           t.nvswitch);
  t.p2p = c.p2p;
  if (c.inter_link) {
    t.nic_bw = c.inter_link->bandwidth;
    t.nics_per_node = c.nics_per_node;
    t.nics_per_gpu = c.nics_per_gpu;
    // The GPU's own PCIe link (gpu.host_bandwidth: NCCL's per-generation figure by default,
    // topo.cc width x speed / 80) unless inter_node.pcie_link names a narrower one on the path.
    t.gpu_nic_pcie_bw = c.pcie_link ? c.pcie_link->bandwidth : c.gpu.host_bandwidth;
  }
  t.net_latency = c.net_latency;
  t.sharp = c.sharp;
  t.net_plugin = parse_net_plugin(c.net_plugin);  // spelling checked by the cluster loader
  t.net_plugin_version = c.net_plugin_version;
  t.amd_cpu = c.cpu == "amd";
  t.bw_scale_intra = c.calibration.bw_scale_intra;
  t.bw_scale_inter = c.calibration.bw_scale_inter;
  t.latency_scale = c.calibration.latency_scale;
  t.latency_offset = c.calibration.latency_offset;
  t.nccl_version = c.nccl_version;
  if (c.calibration.launch_overhead) t.launch_overhead = *c.calibration.launch_overhead;
  t.achieved_all.bw_factor = c.calibration.achieved_all.bw_factor;
  t.achieved_all.latency_offset = c.calibration.achieved_all.latency_offset;
  for (const auto& pa : c.calibration.achieved) {
    auto& slot = t.achieved[static_cast<int>(parse_algo(pa.algo))][static_cast<int>(parse_proto(pa.proto))];
    slot.bw_factor = pa.achieved.bw_factor;
    slot.latency_offset = pa.achieved.latency_offset;
  }
  return t;
}

NcclSettings nccl_settings(const config::CollectiveSettings& s) {
  NcclSettings n;
  for (const auto& a : s.nccl_algo) n.algos.push_back(parse_algo(a));
  for (const auto& p : s.nccl_proto) n.protos.push_back(parse_proto(p));
  n.min_channels = s.nccl_min_nchannels;
  n.max_channels = s.nccl_max_nchannels;
  n.min_ctas = s.nccl_min_ctas;
  n.max_ctas = s.nccl_max_ctas;
  n.collnet_enable = s.nccl_collnet_enable != 0;
  n.buffsize = s.nccl_buffsize;
  n.nthreads = s.nccl_nthreads;
  return n;
}

}  // namespace ddpsim::collectives
