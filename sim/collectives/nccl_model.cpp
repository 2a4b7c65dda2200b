#include "collectives/nccl_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "collectives/nccl_tuner.hpp"

namespace ddpsim::collectives {

bool host_steps(const NcclTopology& t) { return !t.cuda_graph || t.nnodes > 1; }

namespace {

constexpr int kRing = static_cast<int>(Algo::RING);
constexpr int kTree = static_cast<int>(Algo::TREE);
constexpr int kNvls = static_cast<int>(Algo::NVLS);
constexpr int kNvlsTree = static_cast<int>(Algo::NVLS_TREE);
constexpr int kLL = static_cast<int>(Proto::LL);
constexpr int kLL128 = static_cast<int>(Proto::LL128);
constexpr int kSimple = static_cast<int>(Proto::SIMPLE);

// NCCL works in GB/s (1e9 B/s) and microseconds; these convert at the boundary.
constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;

// src/include/device.h / comm.h
constexpr int kMaxChannels = 64;                     // MAXCHANNELS
constexpr int kGraphMaxChannels = kMaxChannels / 2;  // init.cc: ringGraph/treeGraph maxChannels = MAXCHANNELS/2
constexpr int kNvlsChannelsSm90 = 16;                // NVLS_NCHANNELS_SM90
// src/transport/nvls.cc: Blackwell runs 32 NVLS channels (NVLS_NCHANNELS_SM100), from 2.27 24
// inside one node / MNNVL domain (NVLS_NCHANNELS_SM100_NVL) and 32 across nodes; from 2.30.3
// ncclNvlsTreeSm100Tuning sets channels and the NVLS-tree chunk across nodes (nvls_tuning()).
constexpr int kNvlsChannelsSm100 = 32;
constexpr int kNvlsChannelsSm100Nvl = 24;
constexpr int kWarpSize = 32;
constexpr int kSimpleMaxThreads = 512;         // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLLMaxThreads = 512;             // NCCL_LL_MAX_NTHREADS
constexpr int kLL128MaxThreads = 640;          // NCCL_LL128_MAX_NTHREADS
constexpr int kMaxThreads = 640;               // NCCL_MAX_NTHREADS
constexpr double kLLThreadThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD (bytes per thread)
constexpr double kLL128ThreadThreshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
constexpr double kSimpleThreadThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr double kPciBw = 12.0;                // topo.h PCI_BW (GB/s), used for the Simple thread count
constexpr double kLocBw = 5000.0;              // topo.h LOC_BW
// src/graph/search.cc speedArrayIntra / speedArrayInter / sm90SpeedArray* (GB/s per channel).
const std::vector<double> kSpeedIntra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
const std::vector<double> kSpeedInter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                         7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kSm90SpeedIntra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
const std::vector<double> kSm90SpeedInter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                             15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kSm100SpeedIntra = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
const std::vector<double> kSm100SpeedInter = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                              17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// src/graph/tuning.cc ncclTunerConstantsDefaults, rows Tree, Ring, CollNetDirect, CollNetChain, NVLS,
// NVLSTree (PAT omitted; read at v2.30.7). Our Algo order is Ring, Tree, NVLS, NVLS_TREE,
// COLLNET_DIRECT, COLLNET_CHAIN. Microseconds.
constexpr double kBaseLat[kNumAlgos][kNumProtos] = {
    {6.6, 14.0, 8.4},  // Ring
    {6.8, 14.0, 8.4},  // Tree
    {0, 0, 0},         // NVLS
    {0, 0, 0},         // NVLS Tree
    {0, 0, 0},         // CollNet Direct
    {0, 0, 0},         // CollNet Chain
};
// [hw: NVLINK, PCI, NET][algo][proto]
constexpr double kHwLat[3][kNumAlgos][kNumProtos] = {
    {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}, {0, 0, 25}, {0, 0, 3.7}, {0, 0, 2.8}},  // NVLINK
    {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 3.7}, {0, 0, 2.8}},     // PCI
    {{2.7, 4.0, 14.0}, {5.0, 8.5, 14}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 31}, {0, 0, 30}},   // NET
};
// CollNet (tuning.cc): CollNetDirect bus bw / (GPU:NIC ratio f, f -= (f-1)/2), x .85 on sm90+;
// latency + 0.4 us per local rank ("arity serialization"). enqueue.cc: CollNetDirect and
// CollNetChain only with <= NCCL_MAX_DIRECT_ARITY + 1 = 8 local GPUs (device.h); search.cc: the
// CollNetDirect graph has at most NCCL_MAX_DIRECT_ARITY + 1 channels (one head GPU + NIC each).
constexpr double kCollnetDirectHopperFactor = 0.85;
constexpr double kCollnetArityLatUs = 0.4;
constexpr int kMaxDirectArity = 7;
constexpr int kCollnetThreadThreshold = 512;  // comm->threadThresholds[COLLNET_*][SIMPLE]
// The current CollNet tables are the only ones read; older releases run without CollNet here.
// [compcap idx: Volta, Ampere, Hopper, Blackwell][scale: 1 node, 2 nodes, >=4 nodes], GB/s. The
// Blackwell rows are those of the newest tuning tables (ncclTunerConstantsDefaults with
// BLACKWELL_COMPCAP_IDX; nvlsEfficiency Blackwell 0.74).
constexpr int kNumCompCaps = 4;
constexpr double kLLMaxBw[kNumCompCaps][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bw[kNumCompCaps][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChMaxTreeLL128Bw[kNumCompCaps][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw[kNumCompCaps][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNvlsTreeBw[kNumCompCaps][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[kNumCompCaps] = {0.0, 0.0, 0.85, 0.74};

// tuning.cc treeCorrectionFactor[proto][log2(bytes/64)], 64 B to 256 MiB. Rows LL, LL128, Simple.
constexpr double kTreeCorrection[kNumProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// NCCL 2.8 era (src/graph/tuning.cc at NVIDIA/nccl 920dbe5b, version.mk 2.8.3): used for
// nccl_version 2.5.0 <= v < 2.9.0 (tuner tables first shipped in 2.5; 2.8.3 is the verified copy
// nearest to 2.5-2.8; NOTES.md). Our Algo order: Ring, Tree, NVLS, NVLS Tree.
constexpr double kBaseLat28[kNumAlgos][kNumProtos] = {{3.6, 10.0, 8.4}, {4.4, 4.4, 0}, {0, 0, 0}, {0, 0, 0}};
constexpr double kHwLat28[3][kNumAlgos][kNumProtos] = {
    {{.47, 1.9, 3.4}, {.52, 1.25, 28}, {0, 0, 0}, {0, 0, 0}},  // NVLINK
    {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}, {0, 0, 0}, {0, 0, 0}},   // PCI
    {{2.7, 4.0, 9.6}, {5.0, 8.5, 28}, {0, 0, 0}, {0, 0, 0}},   // NET
};
constexpr double kLL128MaxBwPerCh28AllReduce = 16.9;  // ll128MaxBwPerCh[ncclFuncAllReduce]
// ll128MaxBwPerCh = { 18.8, 12.0, 18.3, 15.2, 16.9 } (Broadcast, Reduce, AllGather, ReduceScatter,
// AllReduce), here in our Func order (Reduce dropped).
constexpr double kLL128MaxBwPerCh28[kNumFuncs] = {18.8, 18.3, 15.2, kLL128MaxBwPerCh28AllReduce};
// perChMaxTreeBws [Volta, Ampere][N1, N2, N4]; llMaxBws rows are the current Volta/Ampere rows.
constexpr double kPerChMaxTreeBw28[2][3] = {{26.5, 18.5, 10.0}, {24.0, 22.5, 16.0}};
constexpr double kCompCap80MaxBusBw28 = 235.0;  // "if (compCap80) busBw = std::min(busBw, 235.0f)"
constexpr double kTreeCorrection28[kNumProtos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// Host-staged transfers (no GPU P2P; NCCL's SHM transport): every byte is written by the sender
// into a host buffer and read back over PCIe by the receiver with SM loads, so it crosses the PCIe
// link twice. NCCL's search (paths.cc addInterStep) keeps the PCIe path bandwidth unchanged; we
// model the second crossing explicitly. The link itself moves more payload than NCCL's PCI_BW
// bucket (12 GB/s for Gen3 x16): 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s raw, times the TLP
// payload efficiency 256/(256+24) (256 B max payload, 12-16 B header + 2 B sequence + 4 B LCRC +
// 2 B framing) = 14.4 GB/s, i.e. 1.2 x PCI_BW; Gen4/Gen5 (NCCL 24 / 48 GB/s) have the same ratio.
// Staged factor = 1.2 / 2 = 0.6 of the NCCL figure. See NOTES.md.
constexpr double kPciePayloadOverNcclBw = 1.2;
constexpr double kHostStagedBwFactor = kPciePayloadOverNcclBw / 2;

int compcap_index(Arch arch) {
  switch (arch) {
    case Arch::VOLTA: return 0;
    case Arch::AMPERE:
    case Arch::ADA: return 1;
    case Arch::HOPPER: return 2;
    case Arch::BLACKWELL: return 3;
  }
  return 1;
}
// 2.8: compCap80 = every GPU is sm_80; anything else (Volta, Ada, Hopper) takes the Volta rows.
int compcap_row28(Arch arch) { return arch == Arch::AMPERE ? 1 : 0; }

double tree_correction_now(int proto, int log_size) { return kTreeCorrection[proto][log_size]; }
double tree_correction28(int proto, int log_size) { return kTreeCorrection28[proto][log_size]; }

// ncclTopoGetAlgoTime "plateau effect of ring": 2.8 from nRanks/16 x 64 KiB, x1.9; later releases
// once each channel and rank carries >= 64 B, x1.9 below sm_80 (minCompCap < 80), else x1.4.
double ring_plateau28(const NcclTopology& topo, const NcclTuning&, double bytes) {
  return bytes >= topo.nranks / 16.0 * 65536 ? 1.9 : 1.0;
}
double ring_plateau_now(const NcclTopology& topo, const NcclTuning& t, double bytes) {
  if (!(bytes / (static_cast<double>(t.comm_channels) * topo.nranks) >= 64)) return 1.0;
  return topo.arch == Arch::VOLTA ? 1.9 : 1.4;
}

}  // namespace

// tuning.cc's tables and refinements ("Various model refinements") of one release line; the
// defaults are the current tuner's (tuning.cc read at v2.30.7).
struct TunerTables {
  const double (*base_lat)[kNumProtos] = kBaseLat;         // baseLat[algo][proto], us
  const double (*hw_lat)[kNumAlgos][kNumProtos] = kHwLat;  // hwLat[NVLINK, PCI, NET][algo][proto], us
  bool ll128_sm70_sm80_only = false;       // LL128 defaults on only when every GPU is sm_70 or every one sm_80
  bool ring_net_overhead = true;           // getNetOverhead() floors the ring's intra hop latency
  bool ppn1_tree_net_lat = true;           // one GPU per node: every algorithm takes Tree's NET hwLat
  double ll_multinode_intra_factor = 1;    // LL intra hwLat factor across nodes
  double ring_ll_factor = .5;              // Ring LL: min(llMaxBw, bus x this)
  double ring_ll128_factor_one_gpu = .92;  // Ring LL128 with one GPU per node
  double ll128_per_channel_cap = 0;        // ll128MaxBwPerCh (GB/s); 0 = the per-arch rows
  // 2.8's ll128MaxBwPerCh is per function (Broadcast, AllGather, ReduceScatter, AllReduce in our
  // Func order; null = ll128_per_channel_cap for every function).
  const double* ll128_per_channel_cap_by_func = nullptr;
  // Ring LL for AllGather / ReduceScatter on one node: 2.8 (to 2.20) busBw / 3, against / 4
  // across nodes and for all-reduce; from 2.21 .5 for every function (ring_ll_factor).
  double ring_ll_factor_ag_rs_one_node = .5;
  double tree_ll128_inter_factor = 120.0 / 128.0;  // Tree LL128 across nodes
  double compcap80_max_bus = 0;                    // all-sm_80 bus bw cap (GB/s); 0 = none
  bool hopper_tree_degrade = true;                 // sm_90+: Tree across nodes x .85 (search.cc degrades the tree)
  // The compute-capability row of llMaxBw (one node) and perChMaxTreeBw, and the perChMaxTreeBw rows.
  int (*compcap_row)(Arch) = compcap_index;
  const double (*per_ch_tree_bw)[3] = kPerChMaxTreeBw;
  double (*tree_correction)(int proto, int log_size) = tree_correction_now;  // treeCorrectionFactor
  // ncclTopoGetAlgoTime's "plateau effect of ring" (Ring Simple across nodes): the latency factor.
  double (*ring_plateau)(const NcclTopology& topo, const NcclTuning& t, double bytes) = ring_plateau_now;
};

int log2i(long long n) {  // NCCL log2i: floor(log2(n)), -1 for n <= 0
  int l = -1;
  while (n > 0) {
    n >>= 1;
    ++l;
  }
  return l;
}

namespace {

// NCCL 2.5-2.8: tuning.cc at NVIDIA/nccl 920dbe5b (version.mk 2.8.3), the verified copy nearest
// to 2.5-2.8 (the tuner first shipped in 2.5).
TunerTables tables28() {
  TunerTables t;
  t.base_lat = kBaseLat28;
  t.hw_lat = kHwLat28;
  t.ll128_sm70_sm80_only = true;
  t.ring_net_overhead = false;
  t.ppn1_tree_net_lat = false;
  t.ll_multinode_intra_factor = 1.8;
  t.ring_ll_factor = 1.0 / 4;  // all-reduce: busBw / 4
  t.ring_ll128_factor_one_gpu = 0.7;
  t.ll128_per_channel_cap = kLL128MaxBwPerCh28AllReduce;
  t.ll128_per_channel_cap_by_func = kLL128MaxBwPerCh28;
  t.ring_ll_factor_ag_rs_one_node = 1.0 / 3;
  t.tree_ll128_inter_factor = 0.915;
  t.compcap80_max_bus = kCompCap80MaxBusBw28;
  t.hopper_tree_degrade = false;
  t.compcap_row = compcap_row28;
  t.per_ch_tree_bw = kPerChMaxTreeBw28;
  t.tree_correction = tree_correction28;
  t.ring_plateau = ring_plateau28;
  return t;
}
const TunerTables kTablesNow{};
const TunerTables kTables28 = tables28();

// An era's features follow from its first release (release notes; tuning.cc, enqueue.cc, nvls.cc
// at the tags named in each era's source): the tuner and LL128 from 2.5 (before, 2.4's fixed
// thresholds and fixed Simple slices), NVLS from 2.17, CollNet tables as read from 2.18, 24
// Blackwell NVLS channels in one NVLink domain from 2.27, the NVLS rows rewritten in 2.28.3, NVLS
// tree's NET hwLat 20.9 us (was 14) from 2.28.9, ncclNvlsTreeSm100Tuning from 2.30.3.
TunerEra make_era(int first, int end, const char* releases, const char* source, const TunerTables& tables) {
  TunerEra e{first, end, releases, source, &tables};
  e.tuner = e.ll128 = first >= 20500;
  e.simple_fixed_slices = !e.tuner;
  e.nvls = first >= 21700;
  e.collnet = first >= 21800;
  e.nvls_sm100_nvl = first >= 22700;
  e.nvls_bus_per_step = first >= 22803;
  e.net_hw_lat_override[kNvlsTree] = first < 22809 ? 14.0 : 0.0;
  e.nvls_sm100_tuning = first >= 23003;
  e.ag_rs_nvls = e.nvls && !(first >= 21800 && first < 21900);
  e.ag_rs_nvls_ratio = first < 21800 ? .75 : first < 22300 ? 5.0 / 6.0 : 1.0;
  return e;
}

const std::vector<TunerEra> kEras = {
    make_era(20000, 20500, "2.0-2.4", "src/enqueue.cc getKernelInfo, src/init.cc at f40ce73e (2.4.x)", kTablesNow),
    make_era(20500, 20900, "2.5-2.8", "src/graph/tuning.cc at 920dbe5b (2.8.3)", kTables28),
    make_era(20900, 21700, "2.9-2.16", "src/graph/tuning.cc (no NVLS)", kTablesNow),
    make_era(21700, 21800, "2.17", "src/graph/tuning.cc at v2.19.3-1 (NVLS rows), no CollNet", kTablesNow),
    // 2.18-2.26 share the all-reduce tables read at v2.19.3-1; they are split where AllGather and
    // ReduceScatter change (tuning.cc at v2.18.5-1, v2.19.3-1, v2.22.3-1, v2.23.4-1).
    make_era(21800, 21900, "2.18", "src/graph/tuning.cc at v2.19.3-1 (AllGather/ReduceScatter: v2.18.5-1)", kTablesNow),
    make_era(21900, 22300, "2.19-2.22", "src/graph/tuning.cc at v2.19.3-1, v2.22.3-1", kTablesNow),
    make_era(22300, 22700, "2.23-2.26", "src/graph/tuning.cc at v2.19.3-1 (AllGather/ReduceScatter: v2.23.4-1)",
             kTablesNow),
    make_era(22700, 22803, "2.27-2.28.2", "src/graph/tuning.cc at v2.27.3-1, src/transport/nvls.cc", kTablesNow),
    make_era(22803, 22809, "2.28.3-2.28.8", "src/graph/tuning.cc at v2.28.3-1, v2.28.7-1", kTablesNow),
    make_era(22809, 23003, "2.28.9-2.30.2", "src/graph/tuning.cc at v2.28.9-1", kTablesNow),
    make_era(23003, 0, "2.30.3+", "src/graph/tuning.cc at v2.30.7-1, src/transport/nvls.cc at v2.30.3-1", kTablesNow),
};

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// --- search.cc (ncclTopoCompute), reduced to capacity arithmetic -------------------------------
// A channel at per-channel speed s consumes s on every link it crosses. Inside a node a ring or
// chain needs one outgoing and one incoming link share per GPU, so the fabric holds
// floor(intra_bw / s) channels (assumes a ring exists at every speed the best peer path allows,
// which holds for switches, PCIe and the DGX-1 cube mesh); across nodes each channel enters and
// leaves through one NIC, so NICs hold nics * floor(nic_bw / s).
struct SearchInput {
  bool inter = false;
  int ppn = 1;
  double max_bw = 0;    // GB/s, system->maxBw
  double total_bw = 0;  // GB/s, system->totalBw
  double intra_bw = 0;  // GB/s
  double nic_bw = 0;    // GB/s
  int nics = 0;
  bool hopper = false;     // sm_90 or newer (speed arrays, channel duplication rule)
  bool blackwell = false;  // sm_100: its own speed arrays
  // GB/s of each GPU's PCIe path to its NICs, which all its channels to the network share; 0 = not
  // bounded (set only where the node runs fewer GPUs than NIC groups: NicReach::limited).
  double gpu_nic_bw = 0;
};

// The NICs the ranks of one node reach, as NCCL devices (after a net plugin's grouping).
// NCCL's search (src/graph/search.cc at v2.30.7-1) starts each channel at a NET of
// ncclTopoSelectNets(typeInter): first the GPU's local NETs (topo.cc ncclTopoGetLocalNetType ->
// ncclTopoGetLocal: the NETs of highest path bandwidth, then lowest path type), then NETs whose
// GPU->NET path type is <= typeInter. ncclTopoCompute starts typeInter at the GPUs' best path type
// (PIX on DGX/HGX, the NIC behind the GPU's PCIe switch) and, once a graph is found, raises it only
// while it is below PATH_PXN ("tmpGraph.typeInter < PATH_PXN"), so PHB / SYS NICs (behind the CPU
// or the other socket) are never used when the local ones work. PATH_PXN (graph.h: through another
// GPU over NVLink) needs a GPU of the communicator beside that NIC (paths.cc ncclTopoComputePaths
// sets it from a peer GPU of the same system, and the system holds only the communicator's GPUs).
// So a node running fewer GPUs than NIC groups uses the NICs of its GPUs only, each GPU's through
// its own PCIe path, whose bandwidth is the narrowest link on it (paths.cc ncclTopoComputePaths:
// path bw = min over links; topo.cc PCI link bw = width x speed / 80, x16 Gen5 48 GB/s).
struct NicReach {
  int devices = 0;       // NCCL devices in reach (groups of `group` NICs)
  int group = 1;         // NICs per NCCL device (aws-ofi-nccl's RDMA rails beside one GPU)
  double dev_bw = 0;     // bytes/s per device
  bool limited = false;  // fewer GPUs than NIC groups: only the GPUs' own NICs, through their PCIe
  double gpu_bw = 0;     // bytes/s of one GPU's PCIe path to its NICs where `limited` (0 = not known)
};

NicReach nic_reach(const NcclTopology& topo, int ppn) {
  NicReach r;
  const int nics = topo.nics_per_node;
  // aws-ofi-nccl's RDMA protocol (p5, p5en) shows NCCL one device per group of rails, the NICs
  // beside one GPU (nccl_ofi_topo.cpp groups; nccl_ofi_rdma.cpp get_properties: port_speed x
  // max_group_size): p5 8 x 400 Gb/s instead of 32 x 100, p5en 8 x 400 instead of 16 x 200. The
  // groups follow the hardware (the GPU the rails sit beside), not the ranks a job runs.
  const AwsOfiPlatform* plugin = aws_ofi_platform(topo.net_plugin, topo.net_plugin_version);
  if (plugin && plugin->rdma) {
    if (topo.nics_per_gpu > 1 && nics % topo.nics_per_gpu == 0)
      r.group = topo.nics_per_gpu;
    else if (topo.nics_per_gpu == 0 && ppn > 0 && nics > ppn && nics % ppn == 0)
      r.group = nics / ppn;  // no per-GPU figure: the ranks' share (the model before nics_per_gpu)
  }
  r.devices = nics / r.group;
  r.dev_bw = topo.nic_bw * r.group;
  const int per_gpu = std::max(1, topo.nics_per_gpu / r.group);
  if (topo.nics_per_gpu > 0 && ppn * per_gpu < r.devices) {
    r.limited = true;
    r.devices = ppn * per_gpu;
    r.gpu_bw = topo.gpu_nic_pcie_bw;
  }
  return r;
}

int channels_at(const SearchInput& in, double speed) {
  int n = kGraphMaxChannels;
  // Inside the node each channel takes `speed` from a GPU's outgoing fabric share; across nodes
  // one GPU per channel sends to the NIC instead (the channel leaves the node there), so a GPU's
  // fabric carries (ppn-1)/ppn of the channels (channels start and end at different NICs' GPUs).
  if (in.ppn > 1) {
    const double share = in.inter ? (in.ppn - 1.0) / in.ppn : 1.0;
    n = std::min(n, static_cast<int>(std::floor(in.intra_bw / (speed * share) + 1e-9)));
  }
  if (in.inter) n = std::min(n, in.nics * static_cast<int>(std::floor(in.nic_bw / speed + 1e-9)));
  if (in.inter && in.gpu_nic_bw > 0)
    n = std::min(n, in.ppn * static_cast<int>(std::floor(in.gpu_nic_bw / speed + 1e-9)));
  return std::max(n, 0);
}

NcclGraph search_graph(const SearchInput& in, bool tree_pattern) {
  const auto& speeds = in.inter ? (in.blackwell ? kSm100SpeedInter
                                   : in.hopper  ? kSm90SpeedInter
                                                : kSpeedInter)
                                : (in.blackwell ? kSm100SpeedIntra
                                   : in.hopper  ? kSm90SpeedIntra
                                                : kSpeedIntra);
  const int nspeeds = static_cast<int>(speeds.size());
  int idx = 0;
  while (idx < nspeeds - 1 && speeds[idx] > in.max_bw) ++idx;

  // Pass 1: highest speed first; keep the graph with the largest nChannels*bw
  // (ncclTopoCompareGraphs), lowering the speed while speed[i+1]/best > .49.
  int best_n = 0;
  double best_s = 0;
  for (int i = idx; i < nspeeds; ++i) {
    if (best_n > 0 && speeds[i] / best_s <= .49) break;
    const int n = channels_at(in, speeds[i]);
    if (n > 0 && n * speeds[i] > best_n * best_s + 1e-9) {
      best_n = n;
      best_s = speeds[i];
    }
    if (best_n > 0 && best_n * best_s >= in.total_bw - 1e-9) break;  // "perfect" graph
  }
  NcclGraph g;
  if (best_n == 0) {  // search.cc fallback: one channel at 0.1 GB/s
    g.nchannels = 1;
    g.bw_intra = g.bw_inter = 0.1;
    return g;
  }
  double bw_intra = best_s, bw_inter = best_s;
  int n = best_n;
  // ncclTopoDupChannels: split fast channels in two (not on Hopper+ when already > 4 at < 50 GB/s).
  const bool dup = bw_intra >= 25.0 && !(in.hopper && bw_intra < 50.0 && n > 4);
  if (dup) {
    const int dup_n = std::min(n * 2, kGraphMaxChannels);
    const int div = (dup_n + n - 1) / n;
    bw_intra /= div;
    bw_inter /= div;
    n = dup_n;
  }
  // Pass 2: try to raise the per-channel speed keeping the channel count.
  int i = 0;
  while (i < nspeeds - 1 && speeds[i] > bw_inter) ++i;
  if (!tree_pattern || !in.inter) {
    while (i > 0 && channels_at(in, speeds[i - 1]) >= n) {
      --i;
      bw_intra = bw_inter = speeds[i];
    }
  } else {
    // Tree across nodes: raise bwIntra only, while it is < 2 x bwInter and the node fabric holds it.
    while (i > 0 && bw_intra < 2 * bw_inter && (in.ppn == 1 || n * speeds[i - 1] <= in.intra_bw + 1e-9)) {
      --i;
      bw_intra = speeds[i];
    }
  }
  g.nchannels = n;
  g.bw_intra = bw_intra;
  g.bw_inter = bw_inter;
  return g;
}

// src/transport/nvls.cc ncclNvlsTuning (and, at each tag, the NVLS_NCHANNELS_* rule): NVLS
// channels, NCCL_NVLS_CHUNKSIZE (128 KiB) and the NVLS-tree maximum chunk (NCCL_NVLSTREE_MAX_CHUNKSIZE
// default: 64 KiB on >= 4 nodes, else the chunk size). From 2.30.3 Blackwell across nodes takes
// ncclNvlsTreeSm100Tuning: 2 nodes with >= 48 GB/s NICs 32 channels, tree chunk 128 KiB (ppn <= 4:
// chunk and tree chunk 256 KiB; ppn >= 16, or <= 8 GPUs behind PCIe switches with < 96 GB/s NICs:
// 64 KiB); >= 96 GB/s NICs: ppn <= 8 24 channels, 256 KiB chunks, else 32 channels and 128 KiB
// (64 KiB from 32 GPUs); >= 48 GB/s: 24 channels, 128 KiB (64 KiB behind PCIe switches). NICs are
// taken to sit behind PCIe switches with their GPUs (as for LL128 across nodes).
void nvls_tuning(const NcclTopology& topo, const TunerEra& era, int ppn, double nic_gbs, int& channels, double& chunk,
                 double& tree_max) {
  const bool blackwell = topo.arch == Arch::BLACKWELL;
  chunk = 128.0 * 1024;
  tree_max = 0;
  if (!blackwell)
    channels = kNvlsChannelsSm90;
  else if (!era.nvls_sm100_nvl)
    channels = kNvlsChannelsSm100;
  else
    channels = topo.nnodes > 1 ? kNvlsChannelsSm100 : kNvlsChannelsSm100Nvl;
  if (blackwell && topo.nnodes > 1 && era.nvls_sm100_tuning) {
    if (topo.nnodes == 2 && nic_gbs >= 48.0) {
      channels = 32;
      tree_max = 128.0 * 1024;
      if (ppn <= 4) {
        chunk = tree_max = 256.0 * 1024;
      } else if (ppn >= 16 || (ppn <= 8 && nic_gbs < 96.0)) {
        tree_max = 65536;
      }
    } else if (nic_gbs >= 96.0) {
      if (ppn <= 8) {
        channels = 24;
        chunk = tree_max = 256.0 * 1024;
      } else {
        channels = 32;
        tree_max = ppn < 32 ? 128.0 * 1024 : 65536;
      }
    } else if (nic_gbs >= 48.0) {
      channels = 24;
      tree_max = 65536;  // 128 KiB, 64 KiB with the NIC behind a PCIe switch
    }
  }
  if (tree_max == 0) tree_max = topo.nnodes >= 4 ? 65536.0 : chunk;
}

struct Derived {
  const TunerEra* era = nullptr;  // chosen once from NcclTopology::nccl_version
  Func func = Func::ALL_REDUCE;   // the function tuned
  NcclTuning tuning;
  int ppn = 1;
  int natural_channels = 1;         // comm->nChannels before NCCL_MIN/MAX_NCHANNELS
  double nccl_model_bw_factor = 1;  // channel cap effect on the whole-communicator bandwidth
  // For the achieved-time model (see achieved_time()): per-hop hardware latencies in seconds,
  // [algo][proto], as tuning.cc applies them (intra: NVLink or PCI row; inter: NET row plus the
  // graph's latencyInter and getNetOverhead()).
  std::array<std::array<double, kNumProtos>, kNumAlgos> hop_lat_intra{}, hop_lat_inter{};
  // The latency of the achieved time (s): NCCL's formula with the achieved NET step (hop_lat_inter)
  // and without the latency a net plugin reports for NCCL's pick only.
  std::array<std::array<double, kNumProtos>, kNumAlgos> achieved_latency{};
  // NCCL's one-node NVLS algorithm bandwidth on this node (B/s; 0 without NVLS): the bound on
  // the intra-node half of an NVLS tree (achieved-time item 8).
  double nvls_node_algbw = 0;
  // comm->nvlsChunkSize / nvlsTreeMaxChunkSize (src/transport/nvls.cc ncclNvlsTuning), bytes.
  double nvls_chunk = 128.0 * 1024, nvls_tree_max_chunk = 128.0 * 1024;
  // NCCL's own NVLS channel count for this node and release, before NCCL_MIN/MAX_CTAS.
  int nvls_default_channels = 0;
  // Algorithm bandwidth one communicator channel carries without the whole-communicator caps
  // (llMaxBw, 2.8's compCap80 235 GB/s), B/s: what a shrunk channel count achieves per channel.
  std::array<std::array<double, kNumProtos>, kNumAlgos> channel_bw{};
  NicReach nic;  // the NICs the node's GPUs reach (search and item 7)
};

bool listed(const std::vector<Proto>& v, Proto p) { return std::find(v.begin(), v.end(), p) != v.end(); }
bool listed(const std::vector<Algo>& v, Algo a) { return std::find(v.begin(), v.end(), a) != v.end(); }

// ---- achieved time: mechanisms NCCL's affine tuner formula leaves out -------------------------
//
// (1) Simple-protocol store-and-forward per slice. src/device/all_reduce.h runRing cuts each
//     channel's data into loops of nChannels*nRanks*chunkSize (chunkSize = ALLREDUCE_CHUNKSTEPS
//     steps of buffSizes[SIMPLE]/NCCL_STEPS), realChunkSize = min(chunkSize, ceil(rest /
//     (nChannels*nRanks))) rounded up to (nthreads-WARP_SIZE)*8 bytes; prims_simple.h genericOp
//     then moves a chunk in slices of max(ceil(nelem/(16*SlicePerChunk))*16, stepSize*StepPerSlice/32)
//     and, per slice, waits for the peer's step counter, copies/reduces, and in postPeer issues
//     fence_acq_rel_sys() before publishing the step. The fence makes the writer wait for its
//     stores to be visible, so each slice pays the per-hop synchronisation on the CTA's own
//     critical path, and in a ring every rank does the same thing at the same time (rank r's
//     slice j of step k waits for rank r-1's slice j of step k-1), so the cost is not hidden.
//     We charge NCCL's own per-step hw latency (tuning.cc hwLat, Simple column) once per slice
//     per step instead of once per step: T = base + sum_slices sum_steps (hwLat + slice/B_ch).
//     With one slice per step this is exactly the tuner's formula; with many small slices it is
//     what makes A100 NVSwitch busbw climb only slowly from 4 MiB to 1 GiB.
// (2) LL / LL128 carry a flag in every 8-byte / 128-byte line (prims_ll.h, prims_ll128.h): no fence,
//     latency overlaps the transfer, so the tuner's affine formula is kept for them.
// (3) Ring chains across nodes: a chunk's 2(N-1) hops cross a node boundary nNodes/N of the time
//     (the ring has nNodes inter-node edges out of N); tuning.cc counts 2(nNodes-1) inter steps.
// (4) Host issue rate: ncclAllReduce is asynchronous, so back-to-back calls (nccl-tests, DDP
//     buckets) are paced by max(GPU time, host time per call); a thread that drives G GPUs
//     (nccl-tests -g G, single-process mode) enqueues and launches G kernels per call.
// DEFAULT_BUFFSIZE (NCCL_BUFFSIZE, Simple) is NcclTuning::simple_buffsize (4 MiB unless set).
constexpr int kNcclSteps = 8;                                                // NCCL_STEPS
constexpr int kAllReduceChunkSteps = kNcclSteps / 2;                         // ALLREDUCE_CHUNKSTEPS
constexpr int kAllReduceSliceSteps = kNcclSteps / 4;                         // ALLREDUCE_SLICESTEPS
constexpr int kSlicePerChunk = kAllReduceChunkSteps / kAllReduceSliceSteps;  // ProtoSimple<2, 2>

// (5) NET transport credit window (src/transport/net.cc send/recv proxy, src/include/device.h).
// Each channel's NET connection has NCCL_STEPS buffer slots per protocol; the sender GPU may fill
// slot s only after the sender proxy has seen the network send of step s-NCCL_STEPS complete
// (sendMem->head), and the receiver proxy re-posts a receive for a slot only after the GPU has
// consumed it (sendMem->head on the receive side). A slot is therefore reusable one network round
// trip after it was sent: data one way, completion/credit back. Per channel and direction:
//   bw <= NCCL_STEPS * payload_per_step / RTT,  RTT = 2 x the NET hop latency of that protocol
// (tuning.cc hwLat NET + the graph's latencyInter, our net_latency; Simple adds the GDR flush).
// Payload per step (device.h, comm.h): Simple DEFAULT_BUFFSIZE/NCCL_STEPS = 512 KiB; LL:
// NCCL_LL_LINES_PER_THREAD(8) x NCCL_LL_MAX_NTHREADS(512) x 16 B lines per step, half of each
// line is data = 32 KiB; LL128: NCCL_LL128_ELEMS_PER_THREAD(120) x NCCL_LL128_MAX_NTHREADS(640)
// x 8 B per step, 120 of 128 B data = 576 000 B. With NCCL's own NET latencies (2.7-14 us) the
// bound is 10-300 GB/s per channel and never binds on InfiniBand/EFA-class NICs; it binds when a
// topology carries a large per-hop net_latency (e.g. TCP sockets across a WAN).
constexpr double kLLStepPayload = 8.0 * 512 * 16 / 2;              // 32 KiB
constexpr double kLL128StepPayload = 120.0 * 640 * 8 * 120 / 128;  // 576 000 B

// NVLS kernels are pipelines of warp groups (src/device/all_reduce.h, RunWorkColl<AllReduce,
// NVLS / NVLS_TREE, SIMPLE>) connected by step FIFOs (ProtoSimple<1,1>), each group walking the
// channel's share one loop (nHeads chunks) at a time, so the last loop leaves the pipeline
// (stages - 1) loop times after the first entered it. One-node NVLS: scatter to the heads, NVLS
// reduce + multicast store, gather (3). NVLS tree: scatter, NVLS reduce + send up the tree, receive
// from the tree + multicast store, gather (4). Chunk sizes from enqueue.cc: NVLS starts from
// NCCL_NVLS_CHUNKSIZE (128 KiB), then 64/32/16 KiB below 64/8/2 x concurrentOps x chunk; NVLS tree
// from 128 KiB (64 KiB on >= 4 nodes: NCCL_NVLSTREE_MAX_CHUNKSIZE -2), then 256/128/64/32 KiB below
// 32/16/4/1 x concurrentOps x chunk; concurrentOps = nChannels x nHeads.
constexpr int kNvlsPipelineStages = 3;      // scatter, reduce/multicast, gather
constexpr int kNvlsTreePipelineStages = 4;  // scatter, reduce/send up, receive/multicast, gather

struct ChunkStep {
  double times, chunk;  // below times x concurrentOps x (current chunk), shrink to chunk
};

// Bytes one loop of every channel and head moves (concurrentOps x chunk), enqueue.cc's rule.
double nvls_loop_bytes(double bytes, double ops, double chunk, std::initializer_list<ChunkStep> steps) {
  for (const ChunkStep& st : steps)
    if (bytes < st.times * ops * chunk && chunk > st.chunk) chunk = st.chunk;
  return ops * chunk;
}

// Simple ring all-reduce: per-channel slice schedule. Returns the sum over loops of
// (slices, bytes) for one step of one channel; every one of the 2(N-1) steps repeats it.
struct SliceSchedule {
  double slices = 0;  // slices one channel moves per ring step, summed over loops
  double bytes = 0;   // bytes one channel moves per ring step, summed over loops
};

// fixed_slices: NCCL 2.4's GenericOp (src/collectives/device/primitives.h @ f40ce73e) walks all
// SLICESPERCHUNK slices of fixed size stepSize*SLICESTEPS and waits/posts for each, even when a
// slice carries no data; later releases size slices to the chunk and stop when it is done.
SliceSchedule simple_ring_schedule(double bytes, int nchannels, int nranks, int nthreads, double buffsize,
                                   bool fixed_slices = false) {
  SliceSchedule s;
  const double step = buffsize / kNcclSteps;
  const double chunk = step * kAllReduceChunkSteps;
  const double loop = chunk * nchannels * nranks;
  const double min_slice = step * kAllReduceSliceSteps / 32;
  const double align = (nthreads - kWarpSize) * 8.0;  // roundUp(realChunkSize, (nthreads-WARP)*8 B)
  auto one_loop = [&](double rest) {
    double real = std::min(chunk, std::ceil(rest / (static_cast<double>(nchannels) * nranks)));
    real = std::ceil(real / align) * align;
    const double slice = std::max(std::ceil(real / (16.0 * kSlicePerChunk)) * 16, min_slice);
    s.slices += fixed_slices ? kSlicePerChunk : std::min<double>(kSlicePerChunk, std::ceil(real / slice));
    // Data actually moved (the alignment padding only shapes the slices).
    s.bytes += std::min(real, rest / (static_cast<double>(nchannels) * nranks));
  };
  const double full = std::floor(bytes / loop);
  if (full > 0) {
    one_loop(loop);
    s.slices *= full;
    s.bytes *= full;
  }
  const double rest = bytes - full * loop;
  if (rest > 0) one_loop(rest);
  return s;
}

// ---- graphs (search.cc), one per algorithm pattern ---------------------------------------------

// NVLS graph: one channel per local GPU (head), speed = the fastest that fits the NVSwitch port.
NcclGraph nvls_graph(const SearchInput& in, int ppn, double bw_scale) {
  NcclGraph g;
  g.nchannels = std::min(ppn, kGraphMaxChannels);
  double s = 0;
  for (double v : in.blackwell ? kSm100SpeedIntra : kSm90SpeedIntra)
    if (v * g.nchannels <= in.intra_bw + 1e-9) {
      s = v;
      break;
    }
  g.bw_intra = s * bw_scale;
  double s_inter = s;
  if (in.inter) {
    s_inter = 0;
    for (double v : in.blackwell ? kSm100SpeedInter : kSm90SpeedInter)
      if (v * g.nchannels <= in.nics * in.nic_bw + 1e-9 && v <= s) {
        s_inter = v;
        break;
      }
  }
  // search.cc pass 2 for NVLS: raise bwInter (channel count kept) while it is < 2 x bwIntra and
  // the graph still fits; across nodes the heads' NICs must carry it, inside one node nothing
  // else limits it (the NVLS path check is on bwIntra).
  const auto& arr = in.inter ? (in.blackwell ? kSm100SpeedInter : kSm90SpeedInter)
                             : (in.blackwell ? kSm100SpeedIntra : kSm90SpeedIntra);
  for (auto it = arr.rbegin(); it != arr.rend(); ++it) {
    const double v = *it;
    if (v <= s_inter || !(s_inter < 2 * s)) continue;
    if (in.inter && v * g.nchannels > in.nics * in.nic_bw + 1e-9) break;
    s_inter = v;
  }
  g.bw_inter = s_inter * bw_scale;
  return g;
}

// CollNetDirect graph (search.cc, pattern COLLNET_DIRECT, maxChannels = min(8, local GPUs)): one
// channel per head GPU, each with its own NIC; the inter-node speed array; the heads' NVLink ports
// carry every channel's intra-node traffic, as for the NVLS graph.
NcclGraph collnet_direct_graph(const SearchInput& in, int ppn, int nics_per_node, double bw_scale, double staged) {
  NcclGraph g;
  g.nchannels = std::min({ppn, kMaxDirectArity + 1, std::max(nics_per_node, 1)});
  const auto& arr = in.blackwell ? kSm100SpeedInter : in.hopper ? kSm90SpeedInter : kSpeedInter;
  double s = 0;
  for (double v : arr)
    if (v <= in.nic_bw + 1e-9 && (ppn == 1 || v * g.nchannels <= in.intra_bw + 1e-9)) {
      s = v;
      break;
    }
  if (s == 0) s = arr.back();
  // Pass 2 (search.cc "increase bwIntra for trees (2 nodes or collnet)"): raise bwIntra while
  // < 2 x bwInter and the node's fabric holds it.
  double s_intra = s;
  for (auto it = arr.rbegin(); it != arr.rend(); ++it)
    if (*it > s_intra && s_intra < 2 * s && (ppn == 1 || *it * g.nchannels <= in.intra_bw + 1e-9)) s_intra = *it;
  g.bw_intra = s_intra * bw_scale * staged;
  g.bw_inter = s * bw_scale * staged;
  return g;
}

// ---- algorithm traits --------------------------------------------------------------------------

// What the tuner rules read (tuning.cc ncclTopoTuneModel's locals), computed once per model.
struct TuneContext {
  const NcclTopology& topo;
  const TunerEra& era;
  const TunerTables& tab;
  Func func = Func::ALL_REDUCE;  // the function being tuned (tuning.cc's `coll`)
  int nranks = 1, nnodes = 1, ppn = 1;
  int cc = 1;                // compute-capability row of the current tables
  bool hopper = false;       // sm_90+
  bool cc80_capped = false;  // 2.8's all-sm_80 bus cap applies
  bool nvls_possible = false, collnet_on = false;
  double per_ch_tree = 0, per_ch_ring_ll128 = 0, per_ch_tree_ll128 = 0, per_ch_nvls_tree = 0;  // GB/s
  double net_overhead = 0;                                                                     // getNetOverhead(), us
};

// enqueue.cc topoGetAlgoInfo's channel choice for one candidate.
struct ChannelInput {
  const NcclTopology& topo;
  const NcclTuning& t;
  int a = 0, p = 0;
  double bytes = 0;
  int forced_nc = 0;  // 2.4's fixed-threshold pick (0: none)
};

constexpr unsigned kAllProtos = 1u << kLL | 1u << kLL128 | 1u << kSimple;
constexpr unsigned kSimpleOnly = 1u << kSimple;

// -- graphs exist
bool always(const TuneContext&, const NcclGraph&) { return true; }
bool nvls_tuned(const TuneContext& c, const NcclGraph& g) { return c.nvls_possible && g.nchannels >= 2; }
bool collnet_tuned(const TuneContext& c, const NcclGraph&) { return c.collnet_on; }

// -- enable rules (tuning.cc after the model; enqueue.cc)
bool any_topology(const TuneContext&) { return true; }
// Multi-node NVLS (NVLS + SHARP) needs CollNet.
bool nvls_available(const TuneContext& c) { return c.nnodes == 1 || c.collnet_on; }
bool nvls_tree_available(const TuneContext& c) { return c.nnodes > 1; }  // needs several nodes
// CollNet needs the plugin and <= NCCL_MAX_DIRECT_ARITY + 1 = 8 local GPUs (enqueue.cc);
// CollNetDirect also an NVSwitch node.
bool collnet_chain_available(const TuneContext& c) { return c.collnet_on && c.ppn <= kMaxDirectArity + 1; }
bool collnet_direct_available(const TuneContext& c) { return collnet_chain_available(c) && c.topo.nvswitch; }

// -- bus bandwidth (tuning.cc "Various model refinements"), GB/s
double graph_bus(const TuneContext& c, const NcclGraph& g, double cc80_cap) {
  const double bw = c.nnodes <= 2 ? g.bw_intra : g.bw_inter;
  double bus = g.nchannels * bw;
  if (c.cc80_capped) bus = std::min(bus, cc80_cap);
  return bus;
}
double ll128_cap(const TuneContext& c, const NcclGraph& g, double per_channel) {
  const double cap = c.tab.ll128_per_channel_cap_by_func ? c.tab.ll128_per_channel_cap_by_func[static_cast<int>(c.func)]
                                                         : c.tab.ll128_per_channel_cap;
  return cap > 0 ? cap * g.nchannels : g.nchannels * per_channel;
}
double ring_bus(const TuneContext& c, const NcclGraph& g, int p, double ll_max_bw, double cc80_cap) {
  double bus = graph_bus(c, g, cc80_cap);
  const bool one_phase = c.func != Func::ALL_REDUCE;  // AllGather / ReduceScatter / Broadcast
  if (p == kLL)
    bus = std::min(ll_max_bw,
                   bus * (one_phase && c.nnodes == 1 ? c.tab.ring_ll_factor_ag_rs_one_node : c.tab.ring_ll_factor));
  if (p == kLL128)
    bus = std::min(bus * (c.ppn < 2 ? c.tab.ring_ll128_factor_one_gpu : 0.92), ll128_cap(c, g, c.per_ch_ring_ll128));
  return bus;
}
double tree_bus(const TuneContext& c, const NcclGraph& g, int p, double ll_max_bw, double cc80_cap) {
  double bus = graph_bus(c, g, cc80_cap);
  bus = std::min(bus * .92, g.nchannels * c.per_ch_tree);
  if (p == kLL) bus = std::min(bus / 3.8, ll_max_bw);
  if (p == kLL128)
    bus = std::min(bus * (c.nnodes == 1 ? 7.0 / 9.0 : c.tab.tree_ll128_inter_factor),
                   ll128_cap(c, g, c.per_ch_tree_ll128));
  // search.cc degrades BALANCED_TREE to TREE on Hopper+ across nodes; tuning.cc then takes 15 % off.
  if (c.tab.hopper_tree_degrade && c.hopper && c.nnodes > 1) bus *= .85;
  return bus;
}
// NVLS rows: 2.28.3+ nvlsEfficiency x (nHeads-1)/nHeads x 2 (all-reduce pipelines two operations)
// against bwInter (x2 for NVLS tree on <= 2 nodes); 2.17-2.27 min(bwIntra, bwInter).
double nvls_per_channel(const TuneContext& c, const NcclGraph& g, bool tree) {
  if (!c.era.nvls_bus_per_step)
    return tree ? std::min(g.bw_intra, c.nnodes <= 2 ? g.bw_inter : g.bw_inter / 2) : std::min(g.bw_intra, g.bw_inter);
  double intra = g.bw_intra * kNvlsEfficiency[c.cc] * (g.nchannels - 1) / g.nchannels;
  intra *= 2.0;
  const double inter = g.bw_inter * ((c.nnodes <= 2 && tree) ? 2 : 1);
  return std::min(intra, inter);
}
double nvls_bus(const TuneContext& c, const NcclGraph& g, int, double, double) {
  return g.nchannels * nvls_per_channel(c, g, false);
}
double nvls_tree_bus(const TuneContext& c, const NcclGraph& g, int, double, double) {
  double bw = nvls_per_channel(c, g, true);
  if (c.era.nvls_bus_per_step) bw = std::min(bw, c.per_ch_nvls_tree);
  return g.nchannels * bw;
}
// "bw = nNodes <= 2 || collnet ? bwIntra : bwInter"
double collnet_chain_bus(const TuneContext&, const NcclGraph& g, int, double, double) {
  return g.nchannels * g.bw_intra;
}
// "Collnet+Direct requires all GPUs to have a local NIC to work at full speed": / GPU:NIC ratio
// f (f -= (f-1)/2), x .85 on sm_90+.
double collnet_direct_bus(const TuneContext& c, const NcclGraph& g, int, double, double) {
  double bus = g.nchannels * g.bw_intra;
  double factor = static_cast<double>(c.ppn) / g.nchannels;
  factor -= (factor - 1) / 2;
  bus /= factor;
  if (c.hopper) bus *= kCollnetDirectHopperFactor;
  return bus;
}

// NVLS AllGather / ReduceScatter per channel (tuning.cc): 2.28.3+ bwIntra x nvlsEfficiency x
// (nHeads-1)/nHeads x (ppn-1)/ppn (no second pipelined operation), against bwInter; before,
// min(bwIntra, bwInter) (2.19-2.28.2; 2.17 bwIntra on <= 2 nodes, the same on the one node NVLS
// runs these functions on here).
double nvls_ag_rs_bus(const TuneContext& c, const NcclGraph& g, int, double, double) {
  double bw = std::min(g.bw_intra, g.bw_inter);
  if (c.era.nvls_bus_per_step) {
    const double intra = g.bw_intra * kNvlsEfficiency[c.cc] * (g.nchannels - 1) / g.nchannels * (c.ppn - 1.0) / c.ppn;
    bw = std::min(intra, g.bw_inter);
  }
  return g.nchannels * bw;
}
// NVLS for AllGather / ReduceScatter: the graph with >= 2 heads, the era running it there, and at
// most NCCL_MAX_NVLS_ARITY (32) local ranks (enqueue.cc updateCollCostTable skips NVLS for
// non-AllReduce functions beyond that).
bool nvls_tuned_ag_rs(const TuneContext& c, const NcclGraph& g) {
  return nvls_tuned(c, g) && c.era.ag_rs_nvls && c.ppn <= 32;
}
// Across nodes NVLS AllGather / ReduceScatter needs a CollNet plugin with iallgather /
// ireducescatter and one NIC per local GPU (tuning.cc "AllGather/ReduceScatter requires 1:1
// GPU:NIC"); not modelled, so one node only.
bool one_node(const TuneContext& c) { return c.nnodes == 1; }

// -- bus -> algorithm bandwidth
// tuning.cc: nsteps = 2(nRanks-1) for AllReduce, nRanks-1 for AllGather / ReduceScatter; the
// ring's inter-node steps 2(nNodes-1) and nNodes-1.
// A broadcast's chunk also crosses nRanks-1 ring hops (the rank before the root only receives);
// tuning.cc counts nsteps = nRanks for it, so its bus -> algorithm ratio is nRanks / nRanks = 1.
int ring_steps(Func func, int nranks) { return func == Func::ALL_REDUCE ? 2 * (nranks - 1) : nranks - 1; }
double per_ring_step(const TuneContext& c) {
  if (c.func == Func::BROADCAST) return 1.0;
  return static_cast<double>(c.nranks) / (c.func == Func::ALL_REDUCE ? 2 * (c.nranks - 1) : c.nranks - 1);
}
double half(const TuneContext&) { return .5; }
double nvls_ratio(const TuneContext& c) { return c.era.nvls_bus_per_step ? per_ring_step(c) : 5.0 / 6.0; }
double nvls_ag_rs_ratio(const TuneContext& c) { return c.era.ag_rs_nvls_ratio; }

// -- latency (tuning.cc), us
double ring_latency(const TuneContext& c, int p, double base, double intra, double inter, double& hop_intra) {
  const double overhead = !c.tab.ring_net_overhead ? 0.0 : p == kSimple ? 3 * c.net_overhead : c.net_overhead;
  intra = std::max(intra, overhead);
  hop_intra = intra;
  const int nsteps = ring_steps(c.func, c.nranks);
  const int n_inter = c.nnodes == 1 ? 0 : (c.func == Func::ALL_REDUCE ? 2 : 1) * (c.nnodes - 1);
  return base + ((nsteps - n_inter) * intra + n_inter * inter);
}
// Broadcast (tuning.cc, the Reduce/Broadcast branch of the ring, unchanged since 2.5.6): one hwLat
// of the ring's hardware (NVLink or PCI on one node, NET across nodes, without the graph's
// latencyInter) when every channel runs the same ring (graph->sameChannels), else nsteps of them
// (Simple at Tree's hwLat: "waiting for proper chunk modeling"). ddpsim's graphs are symmetric:
// NCCL's search keeps sameChannels = 1 whenever the same ring replayed on every channel reaches
// its target (search.cc retries with different channels only when it does not, as on a DGX-1's
// hybrid cube mesh, which no preset models), so the one-hwLat form. The achieved time counts the
// hops instead (estimate(), ring_hops): hop_intra as for the other ring functions.
double broadcast_latency(const TuneContext& c, int p, double base, double intra, double inter, double& hop_intra) {
  ring_latency(c, p, base, intra, inter, hop_intra);  // for hop_intra only: the ring's per-hop latency
  return base + (c.nnodes > 1 ? c.tab.hw_lat[2][kRing][p] : intra);
}
double tree_latency(const TuneContext& c, int, double base, double intra, double inter, double& hop_intra) {
  hop_intra = intra;
  return base + 2 * ((c.ppn - 1) * intra + log2i(c.nnodes) * inter);
}
// "arity serialization": + 0.4 us per local rank.
double collnet_direct_latency(const TuneContext& c, int, double base, double intra, double inter, double&) {
  return base + (2 * (std::min(1, c.ppn - 1) * intra + (c.ppn - 1) * kCollnetArityLatUs) + inter);
}
double collnet_chain_latency(const TuneContext& c, int, double base, double intra, double inter, double&) {
  return base + (2 * (c.ppn - 1) * intra + inter);
}
double nvls_latency(const TuneContext& c, int, double, double intra, double inter, double&) {
  return intra + (c.nnodes > 1 ? inter : 0);
}
double nvls_tree_latency(const TuneContext& c, int, double base, double intra, double inter, double&) {
  return base + (intra + 2 * log2i(c.nnodes) * inter);
}

// -- channels (enqueue.cc topoGetAlgoInfo): nc = comm->nChannels, shrunk while
// nBytes < nc * nt * threadThreshold.
int shrink_channels(const ChannelInput& in) {
  int nc = in.t.comm_channels;
  if (in.forced_nc > 0) return std::min(in.forced_nc, in.t.comm_channels);
  const double per_channel = in.t.max_threads[in.a][in.p] * in.t.thread_threshold[in.a][in.p];
  while (nc >= 2 && in.bytes < nc * per_channel) --nc;
  return nc;
}
// "NVLS should not need more than 16 channels"; multi-node NVLS: min(nvlsChannels, nChannels).
int nvls_channels(const ChannelInput& in) {
  return in.topo.nnodes > 1 ? std::min(in.t.nvls_channels, in.t.comm_channels) : in.t.nvls_channels;
}
int nvls_tree_channels(const ChannelInput& in) { return in.t.nvls_channels; }
// "CollNet channel tuning": shrink towards 16, 8, ... channels, halving the threshold at 1.5 x
// each switch point; per head GPU.
int collnet_direct_channels(const ChannelInput& in) {
  int nc = in.t.comm_channels;
  const double nt = in.t.max_threads[in.a][in.p], heads = std::max(1, in.t.collnet_direct.nchannels);
  double thr = in.t.thread_threshold[in.a][in.p];
  bool flag = true;
  for (int sw = 16; sw >= 1 && flag; sw /= 2)
    while ((flag = in.bytes < nc * nt * heads * thr) && nc > sw) {
      if (nc == sw + sw / 2) thr /= 2;
      --nc;
    }
  return nc;
}

// -- bytes per all-reduce byte on a NET edge: a ring's every byte crosses each edge 2(N-1)/N
// times; a tree's up and down use opposite directions of an edge (1).
double ring_edge(int nranks) { return 2.0 * (nranks - 1) / nranks; }
double tree_edge(int) { return 1.0; }
double ring_node_edge(int nranks, int) { return ring_edge(nranks); }
// All-gather / reduce-scatter ring: every byte of the total crosses each edge (N-1)/N times.
double ring_edge_one_phase(int nranks) { return (nranks - 1.0) / nranks; }
double ring_node_edge_one_phase(int nranks, int) { return ring_edge_one_phase(nranks); }
// In-network reduction (CollNet, multi-node NVLS through CollNet): a node sends its part once and
// receives the reduced result once, whatever the node count (the switches reduce).
double in_network_edge(int, int) { return 1.0; }
// A double binary tree over nodes (NCCL's trees and NVLS tree's inter-node part): a node that is
// inner in one tree (two children) and a leaf of the other sends, per byte of its share, half up +
// both children's halves down in the first and half up in the second = 2 bytes in each direction;
// on two nodes each tree is a pair (1 byte). For NVLS tree on 8 x 400 Gb/s H100 this gives 200 GB/s
// algbw (~390 GB/s busbw) beyond two nodes, NVIDIA's GTC 2024 figure for NVLS tree at scale is
// 370-380 GB/s busbw (quoted in NVIDIA/nccl#1649).
double double_tree_edge(int, int nnodes) { return nnodes <= 2 ? 1.0 : 2.0; }

// -- NVLS pipelines (item 9)
// Multi-node NVLS runs all_reduce.h's !oneNode branch: scatter, reduce + send to the network,
// receive from the network + multicast, gather: NVLS tree's four stages. enqueue.cc caps its chunk
// at 32 KiB when NCCL's NVLS bandwidth figure is below 150 GB/s, then applies the one-node rule.
double nvls_loop(const NcclTopology& topo, const Derived& d, double bytes, double ops, int& stages) {
  const NcclTuning& t = d.tuning;
  double nvls_chunk = d.nvls_chunk;
  if (topo.nnodes > 1 && t.bandwidth[kNvls][kSimple] < 150e9) nvls_chunk = std::min(nvls_chunk, 32768.0);
  stages = topo.nnodes == 1 ? kNvlsPipelineStages : kNvlsTreePipelineStages;
  return nvls_loop_bytes(bytes, ops, nvls_chunk, {{64, 65536}, {8, 32768}, {2, 16384}});
}
double nvls_tree_loop(const NcclTopology&, const Derived& d, double bytes, double ops, int& stages) {
  stages = kNvlsTreePipelineStages;
  return nvls_loop_bytes(bytes, ops, std::min(d.nvls_chunk, d.nvls_tree_max_chunk),
                         {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}});
}

// One algorithm running one collective function: its graph, rules and the achieved-time mechanisms
// that apply to it. Rules take and return NCCL's units (GB/s, us). An entry names what differs
// from the defaults.
struct AlgoTraits {
  Algo algo = Algo::RING;
  int nccl_index = 0;                      // NCCL_ALGO_*: enqueue.cc's scan order (ties)
  NcclGraph NcclTuning::*graph = nullptr;  // the search pattern whose graph it runs on
  unsigned protos = kSimpleOnly;           // bit p: protocol p exists for it
  // The graph exists (channels found, feature on); false leaves the (algo, proto) untuned.
  bool (*tuned)(const TuneContext&, const NcclGraph&) = always;
  // The algorithm may be enabled (tuning.cc / enqueue.cc enable rules; NCCL_ALGO applies on top).
  bool (*available)(const TuneContext&) = any_topology;
  // Bus bandwidth (GB/s) of the communicator; ll_max_bw and cc80_cap bound the whole communicator.
  double (*bus_bw)(const TuneContext&, const NcclGraph&, int p, double ll_max_bw, double cc80_cap) = nullptr;
  double (*bus_to_alg)(const TuneContext&) = half;  // tuning.cc "Convert bus BW to algorithm BW"
  // Latency (us) from the base and per-hop hw latencies; sets hop_intra (us) where the achieved
  // model times hops inside the node.
  double (*latency)(const TuneContext&, int p, double base, double intra, double inter, double& hop_intra) = nullptr;
  enum class SimpleThreads { RING, SIMPLE_MAX, MAX } simple_threads = SimpleThreads::MAX;  // NCCL_*_MAX_NTHREADS
  double simple_thread_threshold = kSimpleThreadThreshold;  // bytes per thread (threadThresholds[algo][SIMPLE])
  bool ll_threshold_per_rank = false;                       // LL threshold x nRanks (ring)
  bool nthreads_setting = false;                            // NCCL_NTHREADS applies (Ring/Tree Simple and LL)
  int (*channels)(const ChannelInput&) = shrink_channels;
  // Achieved time (NOTES.md "Achieved time vs NCCL's tuner time").
  bool tree_correction = false;  // ncclTopoGetAlgoTime's treeCorrectionFactor
  bool ring_plateau = false;     // "plateau effect of ring" (Simple, across nodes)
  bool graph_channels = false;   // each communicator channel carries 1/nChannels (channel factor, credit window)
  double (*channel_edge_bytes)(int nranks) = tree_edge;  // bytes per channel NET edge per byte (credit window)
  bool nvls_node_rate = false;                           // item 8: the node's NVLS rate
  bool nics_by_heads = false;                            // only the heads' NICs carry it across nodes
  double (*node_edge_bytes)(int nranks, int nnodes) = in_network_edge;  // bytes on a node's NICs per byte (item 7)
  // NVLS pipeline (item 9): bytes of one loop and the stages; null = no pipeline fill.
  double (*pipeline_loop)(const NcclTopology&, const Derived&, double bytes, double ops, int& stages) = nullptr;
  bool ring_hops = false;  // items 1 and 3: ring latency from its hops, Simple timed slice by slice
};

using ST = AlgoTraits::SimpleThreads;
// All-reduce, in our Algo order (Ring, Tree, NVLS, NVLS tree, CollNetDirect, CollNetChain).
// clang-format off
const AlgoTraits kAllReduceAlgos[kNumAlgos] = {
    {.algo = Algo::RING, .nccl_index = 1, .graph = &NcclTuning::ring, .protos = kAllProtos,
     .bus_bw = ring_bus, .bus_to_alg = per_ring_step, .latency = ring_latency,
     .simple_threads = ST::RING, .ll_threshold_per_rank = true, .nthreads_setting = true,
     .ring_plateau = true, .graph_channels = true, .channel_edge_bytes = ring_edge, .node_edge_bytes = ring_node_edge,
     .ring_hops = true},
    {.algo = Algo::TREE, .nccl_index = 0, .graph = &NcclTuning::tree, .protos = kAllProtos,
     .bus_bw = tree_bus, .latency = tree_latency,
     .simple_threads = ST::SIMPLE_MAX, .nthreads_setting = true,
     .tree_correction = true, .graph_channels = true, .node_edge_bytes = double_tree_edge},
    {.algo = Algo::NVLS, .nccl_index = 4, .graph = &NcclTuning::nvls,
     .tuned = nvls_tuned, .available = nvls_available, .bus_bw = nvls_bus, .bus_to_alg = nvls_ratio, .latency = nvls_latency,
     .channels = nvls_channels, .nvls_node_rate = true, .pipeline_loop = nvls_loop},
    {.algo = Algo::NVLS_TREE, .nccl_index = 5, .graph = &NcclTuning::nvls,
     .tuned = nvls_tuned, .available = nvls_tree_available, .bus_bw = nvls_tree_bus, .bus_to_alg = nvls_ratio,
     .latency = nvls_tree_latency,
     .channels = nvls_tree_channels, .nvls_node_rate = true, .nics_by_heads = true, .node_edge_bytes = double_tree_edge,
     .pipeline_loop = nvls_tree_loop},
    {.algo = Algo::COLLNET_DIRECT, .nccl_index = 2, .graph = &NcclTuning::collnet_direct,
     .tuned = collnet_tuned, .available = collnet_direct_available, .bus_bw = collnet_direct_bus,
     .latency = collnet_direct_latency,
     .simple_thread_threshold = kCollnetThreadThreshold, .channels = collnet_direct_channels},
    {.algo = Algo::COLLNET_CHAIN, .nccl_index = 3, .graph = &NcclTuning::collnet_chain,
     .tuned = collnet_tuned, .available = collnet_chain_available, .bus_bw = collnet_chain_bus,
     .latency = collnet_chain_latency,
     .simple_thread_threshold = kCollnetThreadThreshold},
};

// AllGather and ReduceScatter (tuning.cc ncclTopoTuneModel runs them through the same branch:
// Ring, NVLS, CollNetDirect and, from 2.23, PAT; src/device/all_gather.h and reduce_scatter.h
// runRing: N-1 steps of chunks cut as all-reduce's, ALLGATHER_/REDUCESCATTER_CHUNKSTEPS =
// NCCL_STEPS/2, SLICESTEPS = NCCL_STEPS/4). Not modelled: CollNetDirect (needs a CollNet plugin
// with iallgather / ireducescatter and one NIC per GPU) and PAT (2.23+, one GPU per node).
// ncclTopoGetAlgoTime applies no tree correction or ring plateau to them.
const AlgoTraits kAllGatherAlgos[] = {
    {.algo = Algo::RING, .nccl_index = 1, .graph = &NcclTuning::ring, .protos = kAllProtos,
     .bus_bw = ring_bus, .bus_to_alg = per_ring_step, .latency = ring_latency,
     .simple_threads = ST::RING, .ll_threshold_per_rank = true, .nthreads_setting = true,
     .graph_channels = true, .channel_edge_bytes = ring_edge_one_phase, .node_edge_bytes = ring_node_edge_one_phase,
     .ring_hops = true},
    {.algo = Algo::NVLS, .nccl_index = 4, .graph = &NcclTuning::nvls,
     .tuned = nvls_tuned_ag_rs, .available = one_node, .bus_bw = nvls_ag_rs_bus, .bus_to_alg = nvls_ag_rs_ratio,
     .latency = nvls_latency, .channels = nvls_channels},
};
// Broadcast (tuning.cc: Ring only, all three protocols; src/device/broadcast.h runRing: the root
// sends, each rank copies and forwards, the rank before the root receives; BROADCAST_CHUNKSTEPS =
// BROADCAST_SLICESTEPS = 1). No ring plateau (ncclTopoGetAlgoTime applies it to AllReduce only).
// Every byte crosses each edge it uses once (the edge back into the root is idle): 1 byte per byte
// on a channel's edge and a node's NICs, the figure tree_edge and in_network_edge already give.
const AlgoTraits kBroadcastAlgos[] = {
    {.algo = Algo::RING, .nccl_index = 1, .graph = &NcclTuning::ring, .protos = kAllProtos,
     .bus_bw = ring_bus, .bus_to_alg = per_ring_step, .latency = broadcast_latency,
     .simple_threads = ST::RING, .ll_threshold_per_rank = true, .nthreads_setting = true,
     .graph_channels = true, .channel_edge_bytes = tree_edge, .node_edge_bytes = in_network_edge,
     .ring_hops = true},
};
// clang-format on

// The traits of `func` (empty: not modelled).
std::vector<const AlgoTraits*> traits_of(Func func) {
  std::vector<const AlgoTraits*> out;
  if (func == Func::ALL_REDUCE)
    for (const AlgoTraits& tr : kAllReduceAlgos) out.push_back(&tr);
  if (func == Func::ALL_GATHER || func == Func::REDUCE_SCATTER)
    for (const AlgoTraits& tr : kAllGatherAlgos) out.push_back(&tr);
  if (func == Func::BROADCAST)
    for (const AlgoTraits& tr : kBroadcastAlgos) out.push_back(&tr);
  return out;
}
const AlgoTraits& allreduce_traits(int a) { return kAllReduceAlgos[a]; }

// NCCL_NTHREADS and NCCL_BUFFSIZE (tuning.cc ncclTopoTuneModel, init.cc computeBuffSizes): the
// threads of Ring/Tree Simple and LL, and the Simple buffer, when set.
void apply_buffer_settings(NcclTuning& t, const NcclSettings& settings) {
  if (settings.nthreads > 0)
    for (const AlgoTraits& tr : kAllReduceAlgos)
      if (tr.nthreads_setting) {
        t.max_threads[static_cast<int>(tr.algo)][kSimple] = settings.nthreads;
        t.max_threads[static_cast<int>(tr.algo)][kLL] = settings.nthreads;
      }
  if (settings.buffsize > 0) t.simple_buffsize = settings.buffsize;
}

// plugin_latency false: NCCL without the latency a net plugin reports (the NIC's own), for
// plugin_pick_effect's "NCCL alone".
Derived derive(const NcclTopology& topo, const NcclSettings& settings, Func func = Func::ALL_REDUCE,
               bool plugin_latency = true) {
  validate(topo);
  Derived d;
  d.func = func;
  d.era = &tuner_era(topo.nccl_version);
  const TunerEra& era = *d.era;
  const TunerTables& tab = *era.tables;
  NcclTuning& t = d.tuning;
  const int nranks = topo.nranks;
  const int nnodes = topo.nnodes;
  const int ppn = nranks / nnodes;
  d.ppn = ppn;
  const int cc = compcap_index(topo.arch);
  // sm_90+ (Hopper, Blackwell): NVLS, sm90 search rules, the Tree degrade across nodes.
  const bool hopper = topo.arch == Arch::HOPPER || topo.arch == Arch::BLACKWELL;

  // ---- graphs (search.cc) ----
  SearchInput in;
  in.inter = nnodes > 1;
  in.ppn = ppn;
  in.hopper = hopper;
  in.blackwell = topo.arch == Arch::BLACKWELL;
  in.intra_bw = topo.intra_bw / kGB;
  // The NCCL devices the node's GPUs reach (nic_reach: a plugin's rail groups; below one GPU per
  // NIC group only the GPUs' own, through their PCIe paths). The NICs' total (item 7) follows.
  d.nic = nic_reach(topo, ppn);
  in.nic_bw = d.nic.dev_bw / kGB;
  in.nics = d.nic.devices;
  in.gpu_nic_bw = d.nic.limited ? d.nic.gpu_bw / kGB : 0.0;
  const AwsOfiPlatform* plugin = aws_ofi_platform(topo.net_plugin, topo.net_plugin_version);
  const double peer = (topo.intra_peer_bw > 0 ? topo.intra_peer_bw : topo.intra_bw) / kGB;
  if (!in.inter) {
    in.max_bw = ppn > 1 ? peer : kLocBw;
    in.total_bw = ppn > 1 ? in.intra_bw : kLocBw;
  } else {
    // ncclTopoSearchInit: maxBw = best GPU->NET path (the NIC is the narrow part), totalBw = the
    // GPU's total link bandwidth (NVLink sum or its PCIe link).
    in.max_bw = in.gpu_nic_bw > 0 ? std::min(in.nic_bw, in.gpu_nic_bw) : in.nic_bw;
    in.total_bw = std::max(ppn > 1 ? in.intra_bw : 0.0, in.nic_bw);
  }
  t.ring = search_graph(in, false);
  t.tree = search_graph(in, true);
  // init.cc: ring and tree share the channel count (the minimum of the two).
  const int graph_ch = std::min(t.ring.nchannels, t.tree.nchannels);
  t.ring.nchannels = t.tree.nchannels = graph_ch;

  // Calibration knobs act on the per-channel bandwidth the graph delivers.
  const double bw_scale = nnodes > 1 ? topo.bw_scale_inter : topo.bw_scale_intra;
  const double staged = topo.p2p ? 1.0 : kHostStagedBwFactor;
  for (NcclGraph* g : {&t.ring, &t.tree}) {
    g->bw_intra *= bw_scale * staged;
    g->bw_inter *= bw_scale * staged;
  }

  // ncclTopoPostset doubles the channels; NCCL_MAX/MIN_NCHANNELS then cap / duplicate.
  d.natural_channels = std::min(2 * graph_ch, kMaxChannels);
  int comm_ch = d.natural_channels;
  if (settings.max_channels > 0) comm_ch = std::min(comm_ch, settings.max_channels);
  if (settings.max_ctas > 0) comm_ch = std::min(comm_ch, settings.max_ctas);
  const int min_ch = std::max(settings.min_channels, settings.min_ctas);
  if (min_ch > 0) comm_ch = std::max(comm_ch, std::min(min_ch, kMaxChannels));
  t.comm_channels = comm_ch;
  d.nccl_model_bw_factor = std::min(1.0, static_cast<double>(comm_ch) / d.natural_channels);

  TuneContext c{topo, era, tab, func};
  c.nranks = nranks;
  c.nnodes = nnodes;
  c.ppn = ppn;
  c.cc = cc;
  c.hopper = hopper;
  c.nvls_possible =
      topo.nvls && topo.nvswitch && hopper && topo.intra_class == LinkClass::NVLINK && ppn > 1 && era.nvls;
  // aws-ofi-nccl sets NCCL_NVLS_ENABLE=0 under NCCL 2.18.5 ("a bug with EFA and NCCL version 2.18.3
  // and earlier on platforms with NVLink Switch support"; platform-aws.cpp, unless the user set it).
  if (plugin && topo.nccl_version != 0 && topo.nccl_version < 21805) c.nvls_possible = false;
  if (c.nvls_possible) {
    t.nvls = nvls_graph(in, ppn, bw_scale);
    // enqueue.cc: nc = comm->nvlsChannels; chunk sizes: nvls.cc ncclNvlsTuning.
    nvls_tuning(topo, era, ppn, in.nic_bw, t.nvls_channels, d.nvls_chunk, d.nvls_tree_max_chunk);
    // aws-ofi-nccl (platform-aws.cpp, p5/p5en env): NCCL_NVLS_CHUNKSIZE and
    // NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB ("recovers from the regression" of 2.19.3's 64 KiB).
    if (plugin && plugin->nvls_chunk > 0) d.nvls_chunk = plugin->nvls_chunk;
    if (plugin && plugin->nvlstree_max_chunk > 0) d.nvls_tree_max_chunk = plugin->nvlstree_max_chunk;
    d.nvls_default_channels = t.nvls_channels;
    if (settings.max_ctas > 0) t.nvls_channels = std::min(t.nvls_channels, settings.max_ctas);
    if (settings.min_ctas > 0) t.nvls_channels = std::max(t.nvls_channels, std::min(settings.min_ctas, kMaxChannels));
    // What one node's NVLS all-reduce achieves (item 8): NCCL's one-node NVLS figure as the
    // 2.28.3+ tuner computes it, whatever release runs (the hardware is the same): per head
    // bwIntra x nvlsEfficiency (Hopper .85, Blackwell .74) x (nHeads-1)/nHeads x 2 (two pipelined
    // operations), over the heads, bus -> algorithm bandwidth by ppn / (2 (ppn - 1)). H100: 8 x 40
    // x .85 x 7/8 x 2 = 476 GB/s busbw (272 algbw; measured 1 x 8 H100 ~480). GB200 NVL72 (MNNVL,
    // 72 GPUs, 32 heads at 20 GB/s): 918 busbw (465 algbw). The 2.17-2.27 figure, nHeads x bwIntra
    // x 5/6 (H100 466 busbw, NVL72 1052), ignores the efficiency and the heads term; at 72 GPUs it
    // is 24 % above CoreWeave's measured 847 GB/s (session 5), so it is kept for the pick only.
    const double heads = t.nvls.nchannels;
    const double bus = heads * t.nvls.bw_intra * kNvlsEfficiency[cc] * (heads - 1) / heads * 2.0;
    d.nvls_node_algbw = bus * ppn / (2.0 * (ppn - 1)) * kGB;
  }
  // CollNet (NCCL_COLLNET_ENABLE=1 with a CollNet plugin whose NICs reduce in the network, SHARP):
  // only across nodes (a one-node communicator has no network to reduce in).
  c.collnet_on = topo.sharp && settings.collnet_enable && nnodes > 1 && era.collnet;
  if (c.collnet_on) {
    t.collnet_direct = collnet_direct_graph(in, ppn, topo.nics_per_node, bw_scale, staged);
    // CollNetChain: the tree pattern on CollNet-capable NICs (search.cc collNet=1, pattern TREE).
    t.collnet_chain = t.tree;
  }

  // ---- tuning.cc ncclTopoTuneModel ----
  const int index2 = nnodes <= 2 ? nnodes - 1 : 2;
  const int index1 = nnodes == 1 ? tab.compcap_row(topo.arch) : (topo.amd_cpu ? 1 : 0);
  const double ll_max_bw = kLLMaxBw[index1][index2];
  c.cc80_capped = tab.compcap80_max_bus > 0 && topo.arch == Arch::AMPERE;
  c.per_ch_tree = tab.per_ch_tree_bw[tab.compcap_row(topo.arch)][index2];
  c.per_ch_ring_ll128 = kPerChMaxRingLL128Bw[cc][index2];
  c.per_ch_tree_ll128 = kPerChMaxTreeLL128Bw[cc][index2];
  c.per_ch_nvls_tree = kPerChMaxNvlsTreeBw[cc][index2];
  c.net_overhead = nnodes > 1 ? (topo.amd_cpu ? 2.0 : 1.0) : 0.0;                    // getNetOverhead()
  const int intra_hw = (topo.intra_class == LinkClass::NVLINK && topo.p2p) ? 0 : 1;  // NVLINK : PCI
  const double net_latency_us = topo.net_latency / kUs;                              // graph latencyInter
  // The latency a net plugin reports (ncclNetProperties_t::latency -> search.cc graph->latencyInter):
  // aws-ofi-nccl reports 75 us on p4d/p5, 35 us on p5en (platform-aws.cpp; "NCCL's internal tuner
  // choices work better with this value"), a tuner input, so it enters NCCL's pick only.
  // NCCL reads it from 2.12 (ncclNetProperties_t::latency, search.cc latencyInter; absent at 2.11.4).
  const bool reads_latency = topo.nccl_version == 0 || topo.nccl_version >= 21200;
  const double reported_us =
      plugin && plugin_latency && nnodes > 1 && reads_latency ? plugin->reported_latency_s / kUs : 0.0;
  // What an EFA step costs (achieved time): AWS's own model of it (nccl_ofi_model.cpp
  // model_platform_params net_lat, + TUNER_NET_COMP_OVERHEAD for Simple: "~2 us in the device and
  // ~1 us to write that completion up to the host stack") replaces NCCL's NET hwLat; 0 = keep it.
  const double efa_step_us = plugin ? plugin->model_net_lat_s / kUs : 0.0;
  const double efa_comp_us = plugin ? plugin->comp_overhead_s / kUs : 0.0;

  for (const AlgoTraits* tr : traits_of(func)) {
    const int a = static_cast<int>(tr->algo);
    const NcclGraph& g = t.*(tr->graph);
    for (int p = 0; p < kNumProtos; ++p) {
      if (!(tr->protos >> p & 1u) || !tr->tuned(c, g)) continue;
      // ll_max_bw and the 2.8 compCap80 cap bound the whole communicator, not a channel: the
      // achieved time of a shrunk channel count (estimate()) needs the figure without them.
      const double bus = tr->bus_bw(c, g, p, ll_max_bw, tab.compcap80_max_bus);
      const double inf = std::numeric_limits<double>::infinity();
      const double bus_per_channel = tr->bus_bw(c, g, p, inf, inf) / d.natural_channels;
      const double ratio = tr->bus_to_alg(c);
      t.bandwidth[a][p] = bus * ratio * kGB;  // algorithm bandwidth, B/s
      d.channel_bw[a][p] = bus_per_channel * ratio * kGB;

      double intra_lat = tab.hw_lat[intra_hw][a][p];
      double inter_lat = tab.ppn1_tree_net_lat && ppn == 1 ? tab.hw_lat[2][kTree][p] : tab.hw_lat[2][a][p];
      if (era.net_hw_lat_override[a] > 0) inter_lat = era.net_hw_lat_override[a];
      if (nnodes > 1 && p == kLL) intra_lat *= tab.ll_multinode_intra_factor;
      // Achieved: the hardware step (EFA: AWS's figure) + the topology's extra latency.
      double achieved_inter = efa_step_us > 0 ? efa_step_us + (p == kSimple ? efa_comp_us : 0.0) : inter_lat;
      achieved_inter += net_latency_us;
      if (p == kSimple) achieved_inter += net_latency_us;  // flush
      // NCCL's pick: its NET hwLat + latencyInter (the topology's and the plugin's reported), twice
      // for Simple (tuning.cc "Also add the flush extra latency").
      inter_lat += net_latency_us + reported_us;
      if (p == kSimple) inter_lat += net_latency_us + reported_us;  // flush
      d.hop_lat_inter[a][p] = achieved_inter * kUs;
      double hop_intra = 0;
      t.latency[a][p] = tr->latency(c, p, tab.base_lat[a][p], intra_lat, inter_lat, hop_intra) * kUs;
      d.achieved_latency[a][p] = tr->latency(c, p, tab.base_lat[a][p], intra_lat, achieved_inter, hop_intra) * kUs;
      d.hop_lat_intra[a][p] = hop_intra * kUs;
    }
  }

  // ---- enable / disable (tuning.cc, after the model) ----
  // NCCL_ALGO as NcclSettings carries it is the all-reduce list: for AllGather / ReduceScatter it
  // applies only where it names one of their algorithms (NCCL before 2.24 applied NCCL_ALGO to every
  // function but never disabled Ring for them: tuning.cc at v2.17.1-1 "Never disable ring for
  // non-allreduce operations"; from 2.24 a list may name its function).
  bool algo_filter = !settings.algos.empty();
  if (func != Func::ALL_REDUCE && algo_filter) {
    algo_filter = false;
    for (const AlgoTraits* tr : traits_of(func)) algo_filter = algo_filter || listed(settings.algos, tr->algo);
  }
  for (const AlgoTraits* tr : traits_of(func)) {
    const int a = static_cast<int>(tr->algo);
    const bool algo_on = (!algo_filter || listed(settings.algos, tr->algo)) && tr->available(c);
    for (int p = 0; p < kNumProtos; ++p) {
      bool proto_on = settings.protos.empty() || listed(settings.protos, static_cast<Proto>(p));
      if (p == kLL128 && settings.protos.empty()) {
        // LL128 defaults on only over NVLink (typeIntra <= PATH_NVB) and, across nodes, NICs
        // reached through PCIe switches (typeInter <= PATH_PXB; assumed); sm70+.
        proto_on = (intra_hw == 0 || ppn == 1) && era.ll128;
        if (tab.ll128_sm70_sm80_only && !(topo.arch == Arch::VOLTA || topo.arch == Arch::AMPERE)) proto_on = false;
      }
      if (!algo_on || !proto_on) t.bandwidth[a][p] = 0;
    }
  }

  // ---- threads and thresholds (tuning.cc) ----
  const int simple_ring_threads = (t.ring.bw_intra * graph_ch <= kPciBw) ? 256 : kSimpleMaxThreads;
  for (const AlgoTraits* tr : traits_of(func)) {
    const int a = static_cast<int>(tr->algo);
    const int simple = tr->simple_threads == ST::RING         ? simple_ring_threads
                       : tr->simple_threads == ST::SIMPLE_MAX ? kSimpleMaxThreads
                                                              : kMaxThreads;
    t.max_threads[a] = {kLLMaxThreads, kLL128MaxThreads, simple};
    t.thread_threshold[a] = {kLLThreadThreshold * (tr->ll_threshold_per_rank ? nranks : 1), kLL128ThreadThreshold,
                             tr->simple_thread_threshold};
  }
  // aws-ofi-nccl sets NCCL_BUFFSIZE=8 MiB (platform-aws.cpp env, every p4d/p5/p5en entry) unless
  // the user set it (env_manager insert_envvar without overwrite).
  if (plugin && plugin->buffsize > 0) t.simple_buffsize = plugin->buffsize;
  apply_buffer_settings(t, settings);
  return d;
}

// One candidate's estimate. Mirrors ncclTopoGetAlgoTime (NCCL's own time, used to pick) and
// enqueue.cc topoGetAlgoInfo (channel shrink), which we turn into a bandwidth effect.
AllReduceEstimate estimate(const NcclTopology& topo, const Derived& d, const AlgoTraits& tr, int p, double bytes,
                           int forced_nc = 0) {
  const NcclTuning& t = d.tuning;
  const TunerTables& tab = *d.era->tables;
  const int a = static_cast<int>(tr.algo);
  AllReduceEstimate e;
  e.algo = tr.algo;
  e.proto = static_cast<Proto>(p);
  double bw = t.bandwidth[a][p] * d.nccl_model_bw_factor;  // B/s
  double lat = t.latency[a][p];                            // s
  const long long nbytes = static_cast<long long>(bytes);
  const int log_size = log2i(nbytes >> 6);
  if (tr.tree_correction && log_size >= 0 && log_size < 23) bw *= tab.tree_correction(p, log_size);
  if (tr.ring_plateau && p == kSimple && topo.nnodes > 1) lat *= tab.ring_plateau(topo, t, bytes);
  const double lat_offset = topo.latency_offset;
  // The achieved latency: without a plugin's reported latency, with the achieved NET step.
  double ach_lat = d.achieved_latency[a][p];
  if (tr.ring_plateau && p == kSimple && topo.nnodes > 1) ach_lat *= tab.ring_plateau(topo, t, bytes);
  ach_lat = ach_lat * topo.latency_scale + lat_offset;
  lat = lat * topo.latency_scale + lat_offset;
  e.why.net_step_latency = ach_lat - lat;
  e.nccl_model_time = lat + bytes / bw;
  e.why.nccl_bandwidth = bw;
  e.why.nccl_latency = lat;
  using Limit = AllReduceEstimate::Why::Limit;
  // Records what lowered (or, for the NVLS rate, set) the achieved bandwidth.
  auto limit_to = [&](double bandwidth, Limit why) {
    if (bandwidth < e.bandwidth * (1 - 1e-12)) {
      e.bandwidth = bandwidth;
      e.why.limit = why;
    }
  };

  const int nc = tr.channels(ChannelInput{topo, t, a, p, bytes, forced_nc});
  e.nchannels = nc;
  // Physically each channel is one CTA moving its share at 1/natural of the graph bandwidth, so
  // fewer channels than NCCL's model assumes means proportionally less bandwidth.
  double channel_factor = 1.0;
  if (tr.graph_channels) {
    const double used = std::min(nc, d.natural_channels);
    const double modelled = std::min(t.comm_channels, d.natural_channels);
    channel_factor = used / modelled;
  }
  e.bandwidth = bw;
  limit_to(bw * channel_factor, Limit::CHANNELS);
  if (tr.graph_channels && channel_factor < 1) {
    e.bandwidth = std::min(bw, std::min(nc, d.natural_channels) * d.channel_bw[a][p] * bw /
                                   (t.bandwidth[a][p] * d.nccl_model_bw_factor));  // x tree correction
    if (e.bandwidth < bw * (1 - 1e-12)) e.why.limit = Limit::CHANNELS;
  }
  // (5) NET credit window: per-channel, per-direction cap across nodes.
  if (topo.nnodes > 1 && tr.graph_channels && d.hop_lat_inter[a][p] > 0) {
    const double payload = p == kSimple ? t.simple_buffsize / kNcclSteps
                           : p == kLL   ? kLLStepPayload
                                        : kLL128StepPayload;
    const double rtt = 2 * d.hop_lat_inter[a][p] * topo.latency_scale;
    const double ch_cap = kNcclSteps * payload / rtt;  // bytes/s through one channel's NET edge
    limit_to(nc * ch_cap / tr.channel_edge_bytes(topo.nranks), Limit::CREDIT_WINDOW);
  }
  // (7) The node's NICs at line rate: NCCL's tuner figures can exceed them (NVLS tree counts its
  // inter-node bandwidth twice on two nodes), the wire cannot (bytes per all-reduce byte on a
  // node's NICs: the traits' node_edge_bytes).
  // (8) NVLS and NVLS tree run at what the hardware does, not at NCCL's tuner figure (which since
  // 2.28 converts with nRanks/nsteps, and before used a ratio that fell with the node count): every
  // byte goes through the node's NVLS reduce (multimem ld_reduce) and multicast store, as in a
  // one-node NVLS all-reduce of the whole buffer, so the node's NVLS rate bounds both; the NICs
  // carry an NVLS tree's inter-node part (item 7 below).
  if (tr.nvls_node_rate && d.nvls_node_algbw > 0) {
    e.bandwidth = d.nvls_node_algbw;
    e.why.limit = Limit::NVLS_RATE;
    // NCCL's default channel count is what reaches that rate ("NVLSTree can achieve peak bandwidth
    // with only 16 SMs", sjeaugey in NVIDIA/nccl#1649, for Hopper's 16); fewer channels
    // (NCCL_MAX_CTAS) carry proportionally less, as for rings and trees above.
    if (nc < d.nvls_default_channels) limit_to(d.nvls_node_algbw * nc / d.nvls_default_channels, Limit::CHANNELS);
  }
  if (topo.nnodes > 1) {
    // NVLS tree crosses nodes only at its heads, each through its own NIC (connect.cc connectNvls:
    // treeUp/treeDown are set for the head ranks only; search.cc getNvlsNetDev): min(heads, NICs)
    // NICs per node carry it (all of them on 8-GPU nodes; 32 of an NVL72 rack's 72).
    // NICs are separate NCCL devices unless the net plugin groups them: NCCL itself merges only
    // the ports of one NIC (topo.cc ncclTopoGetFusionEnv, v2.30.3: NCCL_NET_MERGE_LEVEL default
    // PATH_PORT), so with fewer heads than NICs the other NICs carry none of it. aws-ofi-nccl's
    // RDMA protocol shows one device per group of rails (as the search above sees them: p5's
    // 4 x 100G EFA beside each H100 are one device), so there a head reaches its group's NICs.
    // Below one GPU per NIC group the GPUs reach their own NICs only, each GPU's through its
    // PCIe path (nic_reach).
    const NicReach& r = d.nic;
    const int vnics = tr.nics_by_heads ? std::min(r.devices, std::max(1, t.nvls.nchannels)) : r.devices;
    double per_node = vnics * r.dev_bw;
    if (r.limited && r.gpu_bw > 0) per_node = std::min(per_node, d.ppn * r.gpu_bw);
    per_node *= topo.bw_scale_inter;
    limit_to(per_node / tr.node_edge_bytes(topo.nranks, topo.nnodes), Limit::NICS);
  }
  double gpu_time = ach_lat + bytes / e.bandwidth;  // the tuner's affine form (LL, LL128, Tree, NVLS)
  // (9) NVLS / NVLS-tree pipeline fill: the stages behind the first add (stages - 1) loop times.
  if (tr.pipeline_loop) {
    // nChannels x nHeads; the heads are the NVLS graph's channels, one per local GPU up to
    // NCCL_MAX_NVLS_ARITY = 32 (search.cc maxChannels = min(NCCL_MAX_NVLS_ARITY, ngpus)).
    const double ops = static_cast<double>(nc) * std::max(1, t.nvls.nchannels);
    int stages = 1;
    const double loop = tr.pipeline_loop(topo, d, bytes, ops, stages);
    e.why.fill = (stages - 1) * std::min(bytes, loop) / e.bandwidth;
    gpu_time += e.why.fill;
  }
  const double lat_scale = topo.latency_scale;
  if (tr.ring_hops) {
    const int nranks = topo.nranks;
    const int nsteps = ring_steps(d.func, nranks);
    // (3): inter-node share of a chunk's hops; (1)/(2): per-hop cost.
    const double n_inter = topo.nnodes > 1 ? nsteps * static_cast<double>(topo.nnodes) / nranks : 0.0;
    const double hop_lat = ((nsteps - n_inter) * d.hop_lat_intra[a][p] + n_inter * d.hop_lat_inter[a][p]) / nsteps;
    const double base = tab.base_lat[a][p] * kUs;
    const double hop_latency = (base + nsteps * hop_lat) * lat_scale + lat_offset;
    const auto differs = [](double x, double y) { return std::abs(x - y) > 1e-9 * std::max(std::abs(x), std::abs(y)); };
    e.why.ring_hops = differs(hop_latency, ach_lat);
    if (d.func == Func::BROADCAST) {
      // A pipeline (broadcast.h runRing): each channel's part goes round in chunks of one step
      // (BROADCAST_CHUNKSTEPS = 1, 512 KiB at the default buffer), every chunk over nRanks-1 hops;
      // each further chunk pays a Simple slice's GPU-side sync, as in the other rings. A Simple
      // rank forwards a chunk only once all of it has arrived (one slice per chunk), which would
      // add nRanks-2 chunk copies of fill at the channel's share of the links; the published
      // 8 x A100 broadcast_perf table (tests/data/nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt,
      // -g 8) shows no such fill: its 1-256 MiB rows are 30-49 us above this form, as the same
      // machine's all_reduce_perf rows of 1-32 MiB are 26-55 us above the all-reduce model, where
      // the fill would add 210-315 us at 8-64 MiB (24 channels of 10 GB/s). So none is added;
      // LL and LL128 forward line by line anyway.
      gpu_time = hop_latency + bytes / e.bandwidth;
      if (p == kSimple) {
        const double per_channel = bytes / nc;
        const double chunks = std::ceil(per_channel / (t.simple_buffsize / kNcclSteps));
        gpu_time += (chunks - 1) * d.hop_lat_intra[a][p] * lat_scale;
        e.why.simple_slices = chunks > 1;
      }
    } else if (p == kSimple) {
      // Per-channel bus bandwidth: algorithm bw -> bus bw, shared by the channels used.
      const double ch_bw = e.bandwidth * nsteps / nranks / nc;
      const SliceSchedule sch =
          simple_ring_schedule(bytes, nc, nranks, t.max_threads[a][p], t.simple_buffsize, d.era->simple_fixed_slices);
      // Every slice pays the GPU-side sync of a hop (fence + flag, NCCL's intra-node hwLat); the
      // network part of an inter-node hop is paid once, since the NET proxies keep NCCL_STEPS
      // slices in flight (their limit is the credit window of item 6).
      const double slice_lat = d.hop_lat_intra[a][p];
      gpu_time = (base + nsteps * (sch.slices * slice_lat + hop_lat - slice_lat)) * lat_scale + lat_offset +
                 nsteps * sch.bytes / ch_bw;
      e.why.simple_slices = differs(gpu_time, hop_latency + bytes / e.bandwidth);
    } else {
      gpu_time = hop_latency + bytes / e.bandwidth;
    }
  }
  // Post-pick achieved-speed knobs (calibration): NCCL's pick above did not see them.
  {
    const auto& all = topo.achieved_all;
    const auto& own = topo.achieved[a][p];
    const double factor = all.bw_factor * own.bw_factor;
    const double transfer = bytes / e.bandwidth;
    gpu_time = std::max(gpu_time - transfer, 0.0) + all.latency_offset + own.latency_offset + transfer / factor;
    e.bandwidth *= factor;
    e.why.calibrated = factor != 1 || all.latency_offset != 0 || own.latency_offset != 0;
  }
  // (4) host issue rate.
  // With a CUDA graph on one node no host step precedes the kernels (NcclTopology::cuda_graph).
  const double host_time = host_steps(topo) ? topo.gpus_per_process * topo.launch_overhead : 0.0;
  e.time = std::max(gpu_time, host_time);
  e.why.host_bound = host_time > gpu_time;
  e.why.gpus_per_process = topo.gpus_per_process;
  e.latency = std::max(0.0, e.time - bytes / e.bandwidth);
  // All-reduce: ring n-1 of 2(n-1) steps; tree: reduce up, then broadcast down. The one-phase
  // functions are all one phase.
  e.reduce_scatter_time = d.func == Func::ALL_REDUCE ? e.time / 2 : d.func == Func::REDUCE_SCATTER ? e.time : 0.0;
  e.all_gather_time = e.time - e.reduce_scatter_time;
  return e;
}

// ---- NCCL 2.4 (before the 2.5 tuner): fixed thresholds, src/enqueue.cc getKernelInfo /
// getPatternInfo and src/init.cc ncclTreeThreshold / ncclThreadThreshold at NVIDIA/nccl f40ce73e
// (2.4.x), src/include/devcomm.h (MAXTHREADS 256, MAXCHANNELS 16), enqueue.h thresholds.
constexpr int kLegacyMaxThreads = 256;   // MAXTHREADS = NCCL_LL_MAX_NTHREADS
constexpr int kLegacyLLMinThreads = 64;  // NCCL_LL_MIN_NTHREADS
constexpr int kLegacyLLChannelThr = 8;   // NCCL_LL_CHANNEL_THRESHOLD (bytes per thread)
constexpr int kLegacyThreadThr = 64;     // NCCL_THREAD_THRESHOLD (Volta+), x2 across nodes
constexpr int kLegacyMaxChannels = 16;   // MAXCHANNELS

struct LegacyPick {
  int algo = kRing, proto = kSimple, nchannels = 1;
};

LegacyPick legacy24_pick(const NcclTopology& topo, const Derived& d, double bytes) {
  const int nranks = topo.nranks, nnodes = topo.nnodes;
  const int nchannels = std::min(d.tuning.comm_channels, kLegacyMaxChannels);
  // ncclTreeThreshold: trees only across nodes, up to a size from fixed bandwidth/latency guesses.
  const bool nvlink = topo.intra_class == LinkClass::NVLINK && topo.p2p;
  const double ringbw = nvlink ? 5000.0 * nchannels : 5000.0;  // MB/s
  double treebw = nvlink ? ringbw * 3 / 4 : ringbw * 2 / 3;
  if (nvlink && nnodes == 2) treebw *= 2;
  const double ringlat = 6.0 * (nranks - 1);
  const double treelat = 15.0 * log2i(nnodes) + 4.0 * (nranks / nnodes - 1);
  double tree_threshold = 0;
  if (nnodes < 2 || ringlat <= treelat)
    tree_threshold = 0;
  else if (treebw > ringbw)
    tree_threshold = std::numeric_limits<double>::max();
  else
    tree_threshold = ringbw * treebw / (ringbw - treebw) * (ringlat - treelat);
  LegacyPick pick;
  // getPatternInfo: AllGather / ReduceScatter always ring (ncclPatternRing, nchunksPerLoop =
  // nRanks); their nBytes is nRanks x the per-rank count (src/misc/argcheck.cc), as later.
  pick.algo = d.func == Func::ALL_REDUCE && bytes <= tree_threshold ? kTree : kRing;
  // getKernelInfo: LL threads and channels grow with the size, then the LL threshold.
  // Broadcast: ncclPatternPipelineFrom, one chunk per loop (getLoopInfo).
  const double nchunks = pick.algo == kTree || d.func == Func::BROADCAST ? 1 : nranks;
  const int thread_thr = kLegacyThreadThr * (nnodes > 1 ? 2 : 1);
  const int per_thread_ll = std::min(thread_thr, kLegacyLLChannelThr);
  int nt = kLegacyLLMinThreads;
  while (std::ceil(bytes / (nt * nchunks)) > per_thread_ll && nt * 2 <= kLegacyMaxThreads) nt *= 2;
  int nc = static_cast<int>(std::ceil(bytes / (nt * nchunks * per_thread_ll)));
  nc = std::clamp(nc, 1, nchannels);
  const double per_thread = thread_thr * (pick.algo == kTree ? 4 : 1);
  if (bytes <= nc * nt * nchunks * per_thread) {
    pick.proto = kLL;
    pick.nchannels = nc;
  } else {
    pick.proto = kSimple;
    pick.nchannels = nchannels;
  }
  return pick;
}

}  // namespace

void validate(const NcclTopology& topo) {
  auto bad = [](const std::string& field, const std::string& value, const std::string& allowed) {
    throw std::invalid_argument("NcclTopology." + field + ": " + value + " is not " + allowed);
  };
  if (topo.nranks < 1) bad("nranks", std::to_string(topo.nranks), ">= 1");
  if (topo.nnodes < 1) bad("nnodes", std::to_string(topo.nnodes), ">= 1");
  if (topo.nranks % topo.nnodes != 0)
    bad("nranks", std::to_string(topo.nranks), "a multiple of nnodes (" + std::to_string(topo.nnodes) + ")");
  if (topo.nranks / topo.nnodes > 1 && !(topo.intra_bw > 0))
    bad("intra_bw", fmt(topo.intra_bw), "> 0 (needed with more than one GPU per node)");
  if (topo.intra_peer_bw < 0) bad("intra_peer_bw", fmt(topo.intra_peer_bw), ">= 0");
  if (topo.nnodes > 1 && !(topo.nic_bw > 0)) bad("nic_bw", fmt(topo.nic_bw), "> 0 (needed with nnodes > 1)");
  if (topo.nnodes > 1 && topo.nics_per_node < 1)
    bad("nics_per_node", std::to_string(topo.nics_per_node), ">= 1 (needed with nnodes > 1)");
  if (topo.net_latency < 0) bad("net_latency", fmt(topo.net_latency), ">= 0");
  if (topo.gpus_per_process < 1) bad("gpus_per_process", std::to_string(topo.gpus_per_process), ">= 1");
  if (topo.nccl_version != 0 && (topo.nccl_version < 20000 || topo.nccl_version > 29999))
    bad("nccl_version", std::to_string(topo.nccl_version), "0 (current) or a 2.x NCCL_VERSION_CODE (e.g. 20803)");
  if (!(topo.bw_scale_intra > 0)) bad("bw_scale_intra", fmt(topo.bw_scale_intra), "> 0");
  if (!(topo.bw_scale_inter > 0)) bad("bw_scale_inter", fmt(topo.bw_scale_inter), "> 0");
  if (!(topo.latency_scale > 0)) bad("latency_scale", fmt(topo.latency_scale), "> 0");
  if (!(topo.launch_overhead >= 0)) bad("launch_overhead", fmt(topo.launch_overhead), ">= 0");
  if (!(topo.achieved_all.bw_factor > 0)) bad("achieved_all.bw_factor", fmt(topo.achieved_all.bw_factor), "> 0");
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (!(topo.achieved[a][p].bw_factor > 0))
        bad("achieved[" + to_string(static_cast<Algo>(a)) + "][" + to_string(static_cast<Proto>(p)) + "].bw_factor",
            fmt(topo.achieved[a][p].bw_factor), "> 0");
}

std::string to_string(Func f) {
  switch (f) {
    case Func::BROADCAST: return "Broadcast";
    case Func::ALL_GATHER: return "AllGather";
    case Func::REDUCE_SCATTER: return "ReduceScatter";
    case Func::ALL_REDUCE: return "AllReduce";
  }
  return "?";
}

const char* nccl_tests_binary(Func f) {
  switch (f) {
    case Func::BROADCAST: return "broadcast_perf";
    case Func::ALL_GATHER: return "all_gather_perf";
    case Func::REDUCE_SCATTER: return "reduce_scatter_perf";
    case Func::ALL_REDUCE: return "all_reduce_perf";
  }
  return "?";
}

const std::vector<TunerEra>& tuner_eras() { return kEras; }

const TunerEra& tuner_era(int nccl_version) {
  if (nccl_version == 0) return kEras.back();
  for (const TunerEra& e : kEras)
    if (nccl_version >= e.first_version && (e.end_version == 0 || nccl_version < e.end_version)) return e;
  throw std::invalid_argument("NCCL version code " + std::to_string(nccl_version) +
                              " is in no modelled release range (2.0 = 20000 or later, or 0 for current)");
}

bool modelled(Func func, Algo algo) {
  for (const AlgoTraits* tr : traits_of(func))
    if (tr->algo == algo) return true;
  return false;
}

int nccl_algo_index(Algo algo) { return allreduce_traits(static_cast<int>(algo)).nccl_index; }

namespace {
std::string words(Func func) {
  switch (func) {
    case Func::ALL_REDUCE: return "all-reduce";
    case Func::ALL_GATHER: return "all-gather";
    case Func::REDUCE_SCATTER: return "reduce-scatter";
    case Func::BROADCAST: return "broadcast";
  }
  return "?";
}
}  // namespace

NcclTuning tune_model(const NcclTopology& topo, const NcclSettings& settings) { return derive(topo, settings).tuning; }
NcclTuning tune_model(const NcclTopology& topo, const NcclSettings& settings, Func func) {
  return derive(topo, settings, func).tuning;
}

namespace {
// What of the net plugin NCCL's pick sees (collective_candidates: all of it).
struct PluginView {
  bool region_tuner = true;
  bool reported_latency = true;
};

// What NCCL's cost table holds (not NCCL_ALGO_PROTO_IGNORE): the pairs the tuner gave a bandwidth.
std::function<bool(Algo, Proto)> enabled_in(const Derived& d) {
  return [&d](Algo a, Proto p) { return d.tuning.bandwidth[static_cast<int>(a)][static_cast<int>(p)] > 0; };
}

std::vector<AllReduceEstimate> candidates(Func func, const NcclTopology& topo, double bytes,
                                          const NcclSettings& settings, PluginView view) {
  if (traits_of(func).empty()) throw std::invalid_argument("the NCCL model has no rules for " + to_string(func));
  if (!(bytes >= 0)) throw std::invalid_argument(words(func) + " size " + fmt(bytes) + " bytes is not >= 0");
  std::vector<AllReduceEstimate> out;
  if (topo.nranks <= 1) return out;
  const Derived d = derive(topo, settings, func, view.reported_latency);
  for (const AlgoTraits* tr : traits_of(func))
    for (int p = 0; p < kNumProtos; ++p)
      if (d.tuning.bandwidth[static_cast<int>(tr->algo)][p] > 0) out.push_back(estimate(topo, d, *tr, p, bytes));
  // enqueue.cc picks the first strictly smaller time scanning algo-major in NCCL's order
  // (Tree before Ring); stable_sort keeps that order among ties.
  auto nccl_order = [](const AllReduceEstimate& e) {
    return nccl_algo_index(e.algo) * kNumProtos + static_cast<int>(e.proto);
  };
  std::sort(out.begin(), out.end(), [&](const auto& x, const auto& y) { return nccl_order(x) < nccl_order(y); });
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.nccl_model_time < y.nccl_model_time; });
  // A net plugin's tuner (aws-ofi-nccl's region tuner, net_plugin.hpp) sets its (algorithm,
  // protocol)'s cost to 0 in NCCL's table, so NCCL picks it; the channels stay NCCL's.
  if (d.era->tuner && view.region_tuner) {
    const auto pick = aws_ofi_region_pick(topo.net_plugin, func, topo.nranks, topo.nnodes, topo.nccl_version, bytes,
                                          enabled_in(d), topo.net_plugin_version);
    if (pick) {
      auto it = std::find_if(out.begin(), out.end(), [&](const AllReduceEstimate& e) {
        return e.algo == pick->algo && e.proto == pick->proto;
      });
      if (it != out.end()) {
        // P6 also sets the channels of its Tree LL128 all-reduces of 4-32 MiB (net_plugin.hpp
        // aws_ofi_region_channels); NCCL runs that many, at most its communicator's.
        const int nc = aws_ofi_region_channels(topo.net_plugin, func, topo.nranks, topo.nnodes, bytes, pick->algo,
                                               pick->proto, topo.net_plugin_version);
        if (nc > 0) {
          for (const AlgoTraits* tr : traits_of(func))
            if (tr->algo == pick->algo) *it = estimate(topo, d, *tr, static_cast<int>(pick->proto), bytes, nc);
          it->why.plugin_channels = nc;
        }
        it->why.plugin_pick = true;
        std::rotate(out.begin(), it, it + 1);
      }
    }
  }
  if (!d.era->tuner) {
    // NCCL 2.4 had no tuner: its fixed thresholds decide (user NCCL_ALGO/NCCL_PROTO still filter).
    const LegacyPick pick = legacy24_pick(topo, d, bytes);
    auto it = std::find_if(out.begin(), out.end(), [&](const AllReduceEstimate& e) {
      return static_cast<int>(e.algo) == pick.algo && static_cast<int>(e.proto) == pick.proto;
    });
    if (it != out.end()) {
      const AlgoTraits* tr = nullptr;
      for (const AlgoTraits* t : traits_of(func))
        if (static_cast<int>(t->algo) == pick.algo) tr = t;
      *it = estimate(topo, d, *tr, pick.proto, bytes, pick.nchannels);
      std::rotate(out.begin(), it, it + 1);
    }
  }
  return out;
}

std::string pair_name(Algo a, Proto p) { return to_string(a) + "/" + to_string(p); }
}  // namespace

std::vector<AllReduceEstimate> collective_candidates(Func func, const NcclTopology& topo, double bytes,
                                                     const NcclSettings& settings) {
  return candidates(func, topo, bytes, settings, {});
}

PluginPickEffect plugin_pick_effect(Func func, const NcclTopology& topo, double bytes, const NcclSettings& settings) {
  PluginPickEffect r;
  const AwsOfiPlatform* plat = aws_ofi_platform(topo.net_plugin, topo.net_plugin_version);
  if (!plat || topo.nranks <= 1) return r;
  r.plugin = to_string(topo.net_plugin);
  const auto with = candidates(func, topo, bytes, settings, {});
  const auto no_region = candidates(func, topo, bytes, settings, {false, true});
  const auto alone = candidates(func, topo, bytes, settings, {false, false});
  if (with.empty() || no_region.empty() || alone.empty()) return r;
  r.pick = pair_name(with.front().algo, with.front().proto);
  r.without_region_tuner = pair_name(no_region.front().algo, no_region.front().proto);
  r.nccl_alone = pair_name(alone.front().algo, alone.front().proto);
  r.region_forced = with.front().why.plugin_pick;
  r.region_tuner = aws_ofi_region_skip_reason(topo.net_plugin, func, topo.nranks, topo.nnodes, topo.nccl_version,
                                              topo.net_plugin_version);
  if (r.region_tuner.empty() && !r.region_forced) {
    const Derived d = derive(topo, settings, func);
    const bool pat = aws_ofi_in_pat_region(topo.net_plugin, func, topo.nranks, topo.nnodes, bytes, enabled_in(d));
    // aws-ofi-nccl forces NCCL_ALGO_PAT there; the model has no PAT, so NCCL's own pick stands.
    r.region_tuner = pat ? "in its PAT region, which ddpsim does not model: NCCL's own pick among the modelled ones"
                         : "outside its enabled regions";
  }
  if (r.region_tuner.empty()) r.region_tuner = "forced";
  // The latency NCCL read (derive: across nodes, NCCL 2.12+), seen as the difference it made.
  const bool reads = topo.nnodes > 1 && (topo.nccl_version == 0 || topo.nccl_version >= 21200);
  r.reported_latency = reads ? plat->reported_latency_s : 0.0;
  char lat[64];
  std::snprintf(lat, sizeof lat, "reported latency %.0f us", r.reported_latency * 1e6);
  const std::string head = "plugin: " + r.plugin + " ";
  if (r.region_forced) {
    r.effect = r.pick == r.nccl_alone ? "none" : "region_tuner";
    r.text = head + "region tuner " + (r.pick == r.nccl_alone ? "picked " : "forced ") + r.pick +
             (r.pick == r.nccl_alone ? " (NCCL alone would pick it too)" : " (NCCL alone would pick " + r.nccl_alone);
    if (r.pick != r.nccl_alone && r.without_region_tuner != r.nccl_alone)
      r.text += "; with the " + std::string(lat) + " but no region tuner, " + r.without_region_tuner;
    if (r.pick != r.nccl_alone) r.text += ")";
    // P6's channel rule (aws_ofi_region_channels): what it asked and what NCCL runs.
    if (const int asked = with.front().why.plugin_channels; asked > 0) {
      r.channels = asked;
      r.text += "; set " + std::to_string(asked) + " channels (calculateBestNChannelTree), NCCL runs " +
                std::to_string(with.front().nchannels) +
                (with.front().nchannels < asked ? " (its communicator's channels)" : "");
    }
  } else if (r.without_region_tuner != r.nccl_alone) {
    r.effect = "reported_latency";
    r.text = head + lat + " changed NCCL's pick from " + r.nccl_alone + " to " + r.pick +
             " (region tuner: " + r.region_tuner + ")";
  } else {
    r.effect = "none";
    r.text = head + "left NCCL's pick " + r.pick + " alone (region tuner: " + r.region_tuner +
             (r.reported_latency > 0 ? "; " + std::string(lat) + ": the same pick)" : ")");
  }
  // An EFA step taken from another platform's entry of AWS's model (p6-b200: p5en's), said where
  // it enters the achieved time (across nodes).
  if (topo.nnodes > 1 && plat->model_net_lat_s > 0 && *plat->model_net_lat_from) {
    r.efa_step_from = plat->model_net_lat_from;
    char b[200];
    std::snprintf(b, sizeof b,
                  "; EFA step %.0f us per inter-node step, AWS's %s figure (its model has no entry of this platform)",
                  plat->model_net_lat_s * 1e6, plat->model_net_lat_from);
    r.text += b;
  }
  return r;
}

std::vector<AllReduceEstimate> allreduce_candidates(const NcclTopology& topo, double bytes,
                                                    const NcclSettings& settings) {
  return collective_candidates(Func::ALL_REDUCE, topo, bytes, settings);
}

AllReduceEstimate predict_collective(Func func, const NcclTopology& topo, double bytes, const NcclSettings& settings) {
  if (topo.nranks <= 1 || bytes == 0) {
    validate(topo);
    if (traits_of(func).empty()) throw std::invalid_argument("the NCCL model has no rules for " + to_string(func));
    AllReduceEstimate e;
    e.nchannels = 0;
    return e;  // NCCL returns immediately: nothing to move
  }
  auto c = collective_candidates(func, topo, bytes, settings);
  if (c.empty()) {
    std::string algos, protos;
    // Appends in steps: GCC 12 warns falsely (-Wrestrict) on `s += (c ? "" : ",") + str`.
    for (auto a : settings.algos) {
      if (!algos.empty()) algos.push_back(',');
      algos.append(to_string(a));
    }
    for (auto p : settings.protos) {
      if (!protos.empty()) protos.push_back(',');
      protos.append(to_string(p));
    }
    const std::string what = words(func);
    throw std::invalid_argument("no (algorithm, protocol) is enabled for " + what +
                                " on this topology (NCCL_ALGO=" + (algos.empty() ? "default" : algos) +
                                ", NCCL_PROTO=" + (protos.empty() ? "default" : protos) + ")");
  }
  return c.front();
}

AllReduceEstimate predict_allreduce(const NcclTopology& topo, double bytes, const NcclSettings& settings) {
  return predict_collective(Func::ALL_REDUCE, topo, bytes, settings);
}

double algbw(double bytes, double time) { return time > 0 ? bytes / time : 0.0; }

double busbw_allreduce(double algbw_value, int nranks) {
  return nranks > 0 ? algbw_value * 2.0 * (nranks - 1) / nranks : 0.0;
}

double busbw(Func func, double algbw_value, int nranks) {
  if (func == Func::ALL_REDUCE) return busbw_allreduce(algbw_value, nranks);
  if (func == Func::BROADCAST) return algbw_value;  // src/broadcast.cu BroadcastGetBw: factor 1
  return nranks > 0 ? algbw_value * (nranks - 1.0) / nranks : 0.0;
}

namespace {
// Per AllReduceEstimate::Why::Limit, in its order: the words --explain prints and the JSON key.
constexpr const char* kLimitText[] = {"NCCL's", "fewer channels", "NET credit window", "NVLS node rate",
                                      "NICs' line rate"};
constexpr const char* kLimitKey[] = {"nccl", "channels", "credit_window", "nvls_node_rate", "nic_line_rate"};
}  // namespace

std::string limit_key(AllReduceEstimate::Why::Limit limit) { return kLimitKey[static_cast<int>(limit)]; }

std::string explain_difference(const AllReduceEstimate& e) {
  using Limit = AllReduceEstimate::Why::Limit;
  const auto& w = e.why;
  std::vector<std::string> parts;
  char b[160];
  if (w.limit != Limit::NCCL && std::abs(e.bandwidth - w.nccl_bandwidth) > 1e-9 * w.nccl_bandwidth) {
    std::snprintf(b, sizeof b, "bw: %s %.1f GB/s (NCCL %.1f)", kLimitText[static_cast<int>(w.limit)], e.bandwidth / 1e9,
                  w.nccl_bandwidth / 1e9);
    parts.emplace_back(b);
  }
  if (w.fill > 0) {
    // A few bytes' fill is real but would print as "0.0 us": below 1 us it is given in ns.
    if (w.fill < 1e-9)
      std::snprintf(b, sizeof b, "pipeline fill < 1 ns");
    else if (w.fill < 1e-6)
      std::snprintf(b, sizeof b, "pipeline fill %.0f ns", w.fill * 1e9);
    else
      std::snprintf(b, sizeof b, "pipeline fill %.1f us", w.fill * 1e6);
    parts.emplace_back(b);
  }
  if (std::abs(w.net_step_latency) > 1e-12) {
    std::snprintf(b, sizeof b, "net plugin latency %+.1f us (reported to NCCL vs the EFA step)",
                  w.net_step_latency * 1e6);
    parts.emplace_back(b);
  }
  if (w.simple_slices) parts.emplace_back("Simple slices");
  if (w.ring_hops) parts.emplace_back("ring hop latency");
  if (w.calibrated) parts.emplace_back("calibrated");
  if (w.host_bound) {
    std::snprintf(b, sizeof b, "host bound %d x %.1f us", w.gpus_per_process, e.time * 1e6 / w.gpus_per_process);
    parts.emplace_back(b);
  }
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += "; ";
    out += part;
  }
  return out;
}

}  // namespace ddpsim::collectives
