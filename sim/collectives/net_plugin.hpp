#pragma once
// NCCL net plugins that change what NCCL sees and picks: aws-ofi-nccl on AWS EFA (p4d, p5/p5e,
// p5en, p6-b200). Read at aws/aws-ofi-nccl 2daf7d30 (2026-08-21, after v1.21.1); NOTES.md "EFA through
// aws-ofi-nccl". What the plugin does, by source file:
//  - src/platform-aws.cpp platform_data_map: per instance type the latency the plugin reports to
//    NCCL (ncclNetProperties_t::latency -> search.cc graph->latencyInter, a tuner input only:
//    "NCCL's internal tuner choices work better with this value"), the transport protocol (RDMA
//    write on p5/p5en, send/recv on p4d) and the NCCL environment it sets (NCCL_BUFFSIZE 8 MiB,
//    NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB on p5/p5en).
//  - src/nccl_ofi_rdma.cpp get_properties: with the RDMA protocol one NCCL device is a group of
//    rails (nccl_ofi_topo.cpp: the NICs beside one GPU), its speed the sum of the rails'.
//  - src/tuner/nccl_ofi_regions.cpp: the region tuner (p5/p5e, p5en, p6-b200), which forces NCCL's
//    (algorithm, protocol) pick by (bytes, ranks) polygons on more than two nodes, and on p6-b200
//    also the channel count of Tree LL128 all-reduces of 4-32 MiB (calculateBestNChannelTree).
//  - src/tuner/nccl_ofi_model.cpp model_platform_params: AWS's own per inter-node step latency
//    for EFA (20 us p5, 18 us p5en, + TUNER_NET_COMP_OVERHEAD 3 us for Simple); it has no P6
//    entry, and ddpsim takes p5en's for p6-b200, which platform-aws.cpp serves with p5en's entry.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/nccl_names.hpp"

namespace ddpsim::collectives {

enum class Func;

enum class NetPlugin { NONE, AWS_OFI_P4D, AWS_OFI_P5, AWS_OFI_P5EN, AWS_OFI_P6 };

// Spellings of cluster files' `inter_node.net_plugin`.
inline const std::vector<std::string>& net_plugin_names() {
  static const std::vector<std::string> names = {"aws-ofi-nccl/p4d", "aws-ofi-nccl/p5", "aws-ofi-nccl/p5en",
                                                 "aws-ofi-nccl/p6"};
  return names;
}
// "" -> NONE; throws std::invalid_argument for an unknown name.
NetPlugin parse_net_plugin(const std::string& name);
std::string to_string(NetPlugin p);

struct AwsOfiPlatform {
  const char* name = "";          // platform_data_map entry
  double reported_latency_s = 0;  // .latency (us in the source): NCCL's graph latencyInter
  bool rdma = false;              // .default_protocol RDMA (rails grouped into one device)
  double buffsize = 0;            // env NCCL_BUFFSIZE (bytes; 0 = not set)
  double nvls_chunk = 0;          // env NCCL_NVLS_CHUNKSIZE (bytes; 0 = not set)
  double nvlstree_max_chunk = 0;  // env NCCL_NVLSTREE_MAX_CHUNKSIZE (bytes; 0 = not set)
  // nccl_ofi_model.cpp model_platform_params .net_lat: AWS's per inter-node step latency of EFA
  // on this platform (0 = the plugin has no model for it: NCCL's NET latencies stay).
  double model_net_lat_s = 0;
  // The platform whose model_platform_params entry model_net_lat_s is, where the plugin's model has
  // none of this one ("" = its own): p6-b200 takes p5en's (one platform_data_map entry serves both).
  const char* model_net_lat_from = "";
  double comp_overhead_s = 0;  // TUNER_NET_COMP_OVERHEAD (3 us): added for Simple
  bool region_tuner = false;   // nccl_ofi_regions.cpp is_region_supported
};

// aws-ofi-nccl releases (major*10000 + minor*100 + patch; 0 = the source read, 2daf7d30 after
// 1.21.1), by when each part of the platform table entered (git log -S over src/ and include/):
// rails grouped (max_group_size) and the reported latency 1.7.0; NCCL_NVLS_CHUNKSIZE and
// NCCL_NVLSTREE_MAX_CHUNKSIZE 1.8.0; NCCL_BUFFSIZE and the region tuner 1.10.0 (1.8-1.9 had a
// model-based tuner, not modelled: NCCL's own pick there). Before 1.7 none of it applies.
inline constexpr int kAwsOfiGroupedRails = 10700, kAwsOfiNvlsChunks = 10800, kAwsOfiRegionTuner = 11000;
// p6-b200: its region tuner (d16b33c9) and the p5en/p6-b200 platform entry (2496e7de) entered in
// 1.16.0, the Tree LL128 channel rule (7bd9ee56) in 1.17.0; before 1.16.0 nothing of P6 applies.
inline constexpr int kAwsOfiP6 = 11600, kAwsOfiP6TreeChannels = 11700;

// nullptr for NetPlugin::NONE (and for a release before 1.7.0); `plugin_version` 0 = current.
const AwsOfiPlatform* aws_ofi_platform(NetPlugin p, int plugin_version = 0);

// The region tuner's forced (algorithm, protocol), as region_get_coll_info_internal_v3 sets it:
// on more than two nodes, NCCL 2.21.5+ (tuner v2/v3; nccl_version 0 = current), where the
// platform has regions for the collective and ranks per node (aws_ofi_regions), scanning them in
// order and skipping an (algorithm, protocol) NCCL has disabled (`enabled` false: cost table
// NCCL_ALGO_PROTO_IGNORE) and PAT regions (not modelled; real NCCL would run PAT there). nullopt:
// NCCL's own pick stands (outside every region, or not applicable).
// include/tuner/nccl_ofi_tuner_region.h TUNER_MAX_RANKS, TUNER_MAX_SIZE: the tuner's plane.
inline constexpr double kAwsOfiTunerMaxRanks = 1024.0 * 1024;
inline constexpr double kAwsOfiTunerMaxSize = 100.0 * 1024 * 1024 * 1024;

struct TunerPoint {  // nccl_ofi_tuner_point_t: (bytes, ranks)
  double x = 0, y = 0;
};

// One region of the region tuner (nccl_ofi_tuner_region_t), vertices in linear scale as the source
// writes them (net_plugin_regions.cpp).
struct AwsOfiRegion {
  std::optional<Algo> algo;  // nullopt: NCCL_ALGO_PAT, which ddpsim does not model
  Proto proto = Proto::SIMPLE;
  int num_vertices = 0;  // the source's count (a transcription check: vertices.size())
  std::vector<TunerPoint> vertices;
};
// The platform's regions for `func` on nranks over nnodes, in the source's order (set_regions per
// collType in region_init_internal_p5_p5e / region_init_internal_p5en); empty where the source
// has none (NCCL's own tuner picks: region_get_coll_info_internal_v3 "Fall back to NCCL's tuner").
const std::vector<AwsOfiRegion>& aws_ofi_regions(NetPlugin p, Func func, int nranks, int nnodes);

struct RegionPick {
  Algo algo;
  Proto proto;
};
std::optional<RegionPick> aws_ofi_region_pick(NetPlugin p, Func func, int nranks, int nnodes, int nccl_version,
                                              double bytes, const std::function<bool(Algo, Proto)>& enabled,
                                              int plugin_version = 0);
// The channel count the region tuner sets with its pick (0: NCCL's own), as
// region_get_coll_info_internal_v3 does on P6 only: for a Tree LL128 all-reduce of 4-32 MiB at 8
// ranks per node, calculateBestNChannelTree (of 16, 24 and 32 channels the one whose LL128 chunk,
// calculateChunkSizeTreeLL128, is largest; the larger count on a tie). NCCL then runs that many
// (enqueue.cc ncclGetAlgoInfo: "nChannels will be overriden by the plugin setting"), at most its
// communicator's channels. Its PAT rule is not taken (PAT is not modelled).
int aws_ofi_region_channels(NetPlugin p, Func func, int nranks, int nnodes, double bytes, Algo algo, Proto proto,
                            int plugin_version = 0);
// calculateChunkSizeTreeLL128(message_size, nChannels, log2_nnodes) of nccl_ofi_regions.cpp, in
// bytes on the wire. Exposed for tests.
double aws_ofi_tree_ll128_chunk(double bytes, int nchannels, int log2_nnodes);

// Why the region tuner leaves NCCL's pick to NCCL for this communicator and function, whatever
// the size ("" when it has regions to scan): the words `collective --explain` prints.
std::string aws_ofi_region_skip_reason(NetPlugin p, Func func, int nranks, int nnodes, int nccl_version,
                                       int plugin_version = 0);
// Whether the point (bytes, nranks) falls in a PAT region the scan reaches before any enabled
// region contains it: there aws-ofi-nccl forces PAT, which ddpsim does not model.
bool aws_ofi_in_pat_region(NetPlugin p, Func func, int nranks, int nnodes, double bytes,
                           const std::function<bool(Algo, Proto)>& enabled);

// The ray-casting point-in-polygon test of nccl_ofi_regions.cpp is_inside_region, on (bytes,
// ranks) points given in linear scale (log2 taken here, 0 -> 1e-6 as transform_log2 does):
// 1 inside, 0 on an edge, -1 outside. Exposed for tests.
int aws_ofi_inside_region(TunerPoint p, const std::vector<TunerPoint>& polygon);
// extend_region(a, b, z) of nccl_ofi_regions.cpp, linear scale in and out.
TunerPoint aws_ofi_extend_region(TunerPoint a, TunerPoint b, TunerPoint z);

}  // namespace ddpsim::collectives
