#pragma once
// NCCL all-reduce cost model: predicts NCCL's own pick (algorithm, protocol, channels, and its
// tuner time in nccl_model_time) and the time that pick achieves (time), which adds mechanisms
// the tuner's affine formula leaves out (Simple per-slice sync, host issue rate; NOTES.md).
//
// Mirrors NVIDIA/nccl (v2.2x-2.28 era, the version whose tables docs/facts.md §2 quotes):
//   src/graph/search.cc   ncclTopoCompute / ncclTopoDupChannels  -> derive_graphs()
//   src/graph/topo.h      SM*_NVLINK_BW, PCI_BW, NET_BW            -> caller's NcclTopology
//   src/graph/tuning.cc   ncclTopoTuneModel / ncclTopoGetAlgoTime  -> tune_model(), model_time()
//   src/enqueue.cc        topoGetAlgoInfo (min-time pick, nc/nt shrink) -> predict_allreduce()
//   src/include/device.h  NCCL_*_THREAD_THRESHOLD, NCCL_*_MAX_NTHREADS
// See sim/collectives/NOTES.md for what is simplified.
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/func.hpp"
#include "collectives/nccl_names.hpp"
#include "collectives/net_plugin.hpp"

namespace ddpsim::collectives {

// Ada uses NCCL's Ampere-class tables: tuning.cc picks the table by minCompCap >= 80 / >= 90,
// and search.cc uses the sm90 speed arrays only for ccMin >= 90, so sm_89 falls in the Ampere class.
enum class Arch { VOLTA, AMPERE, HOPPER, ADA, BLACKWELL };
enum class LinkClass { NVLINK, PCI, NET };  // NCCL_HW_NVLINK / NCCL_HW_PCI / NCCL_HW_NET

inline constexpr int kNumAlgos = 6;

inline constexpr int kNumProtos = 3;

// Host cost of one ncclAllReduce call on one GPU (NCCL enqueue + cudaLaunchKernel), seconds.
// See NOTES.md "Added constants" for the source.
inline constexpr double kHostLaunchSeconds = 5e-6;

struct NcclTopology {
  int nranks = 1;  // total GPUs
  int nnodes = 1;  // ranks per node = nranks / nnodes
  Arch arch = Arch::AMPERE;
  int sm_count = 108;
  LinkClass intra_class = LinkClass::NVLINK;  // what connects GPUs inside a node
  double intra_bw = 0;  // bytes/s per GPU into the intra-node fabric, one direction (NCCL-effective)
  // bytes/s of the best single GPU->GPU path (NCCL's system->maxBw without NICs). 0 = intra_bw,
  // which is right for a switch or PCIe; set it for NVLink meshes (DGX-1 V100: NV2 = 2 x 20 GB/s).
  double intra_peer_bw = 0;
  bool nvswitch = false;  // all-to-all switch inside the node
  bool nvls = false;      // NVLink SHARP available (H100/H200 NVSwitch systems)
  bool p2p = true;        // false: traffic staged through host memory (NCCL SHM transport)
  double nic_bw = 0;      // bytes/s per NIC, one direction
  int nics_per_node = 0;
  // NICs on one GPU's own PCIe path (NCCL's local NETs of the GPU, topo.cc ncclTopoGetLocal; the
  // cluster's inter_node.nics_per_gpu): a node running fewer GPUs than that many NICs each reaches
  // only its GPUs' own (nccl_model.cpp nic_reach). 0 = the ranks share every NIC of the node.
  int nics_per_gpu = 0;
  // bytes/s of the narrowest PCIe link between a GPU and its NICs (NCCL's GPU->NET path bandwidth
  // below the NIC's line rate, topo.cc: x16 Gen3 12, Gen4 24, Gen5 48 GB/s); 0 = not bounded.
  double gpu_nic_pcie_bw = 0;
  double net_latency = 0;  // extra seconds per inter-node hop beyond NCCL's NET hw latency (graph latencyInter)
  // The inter-node fabric reduces in the network (InfiniBand SHARP switches with NCCL's CollNet
  // plugin, Mellanox/nccl-rdma-sharp-plugins): CollNet algorithms exist, used with
  // NcclSettings::collnet_enable (NCCL_COLLNET_ENABLE=1).
  bool sharp = false;
  // The net plugin NCCL loads for the NICs (aws-ofi-nccl on EFA; net_plugin.hpp): the latency it
  // reports (NCCL's pick only), its rails grouped into one NCCL device, the NCCL settings it
  // forces, its region tuner's pick and AWS's EFA step latency (NOTES.md "EFA through aws-ofi-nccl").
  NetPlugin net_plugin = NetPlugin::NONE;
  // Its release (aws-ofi-nccl: major*10000 + minor*100 + patch, e.g. 10704 for 1.7.4, from a log's
  // "NET/OFI Initializing aws-ofi-nccl 1.7.4-aws"); 0 = the release the model reads (net_plugin.hpp
  // says what earlier ones lack).
  int net_plugin_version = 0;
  bool amd_cpu = false;  // tuning.cc: llMaxBws row and getNetOverhead() depend on the CPU vendor (multi-node)
  // GPUs one host thread drives (nccl-tests -g G in single-process mode). The host enqueues and
  // launches one kernel per GPU per call, so back-to-back calls cannot run faster than
  // gpus_per_process * kHostLaunchSeconds. DDP (one process per GPU) is 1.
  int gpus_per_process = 1;
  // The collectives are replayed from a CUDA graph (nccl-tests -G N; PyTorch's CUDA-graph capture):
  // the host enqueues them once, at capture, so on one node nothing bounds the issue rate but
  // the GPU. Across nodes NCCL still puts a host step before every captured kernel that has proxy
  // (network) work: enqueue.cc launches a host function that pushes the proxy ops and makes the
  // kernel wait for it ("host tasks impose a high performance cost in CUDA"), one per GPU's
  // plan, so there the per-GPU host bound stays (at the eager launch's figure: no measured cost
  // of that host function was found).
  bool cuda_graph = false;
  // NCCL_VERSION_CODE of the library (major*10000 + minor*100 + patch, e.g. 20803 for 2.8.3);
  // 0 = current. Selects the tuner generation: 2.5-2.8 use the 2.8.3 tables (NOTES.md), older
  // ones have no LL128, NVLS needs 2.17+.
  int nccl_version = 0;
  // Host seconds per GPU per call (the issue-rate floor above); calibrate fits it when a run
  // drove several GPUs from one process.
  double launch_overhead = kHostLaunchSeconds;
  // calibration knobs (identity by default), so a fit can adjust the model:
  double bw_scale_intra = 1.0, bw_scale_inter = 1.0, latency_scale = 1.0, latency_offset = 0.0;
  // What the hardware achieves relative to the model once NCCL has picked (algorithm, protocol):
  // NCCL's pick comes from its own topology model and does not see these, so they act after the
  // pick, on the achieved time only: time = latency + offset + (bytes / bandwidth) / bw_factor.
  // `achieved_all` applies to every pair, `achieved[algo][proto]` on top of it. Fitted by calibrate.
  struct Achieved {
    double bw_factor = 1.0;
    double latency_offset = 0.0;  // seconds
  };
  Achieved achieved_all;
  std::array<std::array<Achieved, kNumProtos>, kNumAlgos> achieved{};
};

struct NcclSettings {                      // names follow NCCL env vars
  std::vector<Algo> algos;                 // empty = all enabled (NCCL_ALGO)
  std::vector<Proto> protos;               // empty = NCCL default set (NCCL_PROTO); listing LL128 forces it on
  int min_channels = 0, max_channels = 0;  // 0 = NCCL default (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS)
  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (2.17+, comm->config.minCTAs / maxCTAs; 0 = NCCL's 1 / MAXCHANNELS):
  // they bound the communicator's channels as the two above do (connect.cc ncclTopoPostset: the
  // tighter of each pair applies) and, unlike them, the NVLS channels (nvls.cc:
  // nvlsChannels = max(minCTAs, min(maxCTAs, channels))).
  int min_ctas = 0, max_ctas = 0;
  bool collnet_enable = false;  // NCCL_COLLNET_ENABLE (default 0); needs NcclTopology::sharp
  // NCCL_BUFFSIZE: bytes of each channel's Simple-protocol buffer per peer (init.cc computeBuffSizes,
  // DEFAULT_BUFFSIZE 4 MiB); 0 = default. It sets the step (buffsize / NCCL_STEPS) and so the ring's
  // chunk and slice sizes (enqueue.cc) and the NET credit window; NCCL's tuner does not read it.
  double buffsize = 0;
  // NCCL_NTHREADS: threads per CTA for Ring/Tree Simple and LL (tuning.cc getNthreads: a multiple of
  // 32 in [64, 512]); 0 = default (512, or 256 for Ring Simple on a PCIe-class ring). NCCL's tuner
  // bandwidths do not read it; enqueue.cc's channel shrink (bytes < nc x nt x threshold) and the
  // ring's chunk alignment ((nt - 32) x 8 bytes) do.
  int nthreads = 0;
};

struct AllReduceEstimate {
  Algo algo = Algo::RING;
  Proto proto = Proto::SIMPLE;
  int nchannels = 1;     // channels used for this size (after enqueue.cc's shrink)
  double time = 0;       // seconds achieved (mechanism model; NOTES.md "Achieved time")
  double latency = 0;    // seconds: time - bytes/bandwidth (includes per-slice sync, host bound)
  double bandwidth = 0;  // bytes/s algorithm bandwidth used in the bw term
  double reduce_scatter_time = 0, all_gather_time = 0;  // sum to time
  double nccl_model_time = 0;  // seconds: NCCL's own estimate (ncclTopoGetAlgoTime), used to pick
  // Why `time` differs from `nccl_model_time` (ddpsim collective --explain): the mechanisms of
  // the achieved-time model (nccl_model.cpp, NOTES.md items 1-9) that applied to this candidate.
  struct Why {
    double nccl_bandwidth = 0;  // bytes/s: the algorithm bandwidth NCCL's estimate used
    double nccl_latency = 0;    // seconds: the latency NCCL's estimate used
    // What set the achieved bandwidth, the last that changed it (in the order they apply).
    enum class Limit { NCCL, CHANNELS, CREDIT_WINDOW, NVLS_RATE, NICS } limit = Limit::NCCL;
    double fill = 0;             // seconds of NVLS / NVLS-tree pipeline fill (item 9)
    bool ring_hops = false;      // ring latency from its hops (item 3), not NCCL's step count and plateau factor
    bool simple_slices = false;  // Simple ring timed slice by slice (item 1)
    bool host_bound = false;     // the host issue rate (item 4) set the time
    int gpus_per_process = 1;    // the host bound's GPUs per thread (nccl-tests -g)
    bool calibrated = false;     // a calibration (nccl_calibration) changed the achieved time
    // Seconds the achieved latency differs from NCCL's by the network step: a net plugin's reported
    // latency that only NCCL's pick sees, and EFA's step as AWS models it (net_plugin.hpp).
    double net_step_latency = 0;
    bool plugin_pick = false;  // the net plugin's tuner (aws-ofi-nccl regions) forced this candidate
    int plugin_channels = 0;   // the channels that tuner set with its pick (P6's Tree LL128 rule; 0 = NCCL's)
  } why;
};

// One line saying why a candidate's achieved time differs from NCCL's estimate ("" if it does
// not): e.g. "bw: NVLS node rate 272.0 GB/s (NCCL 366.2); pipeline fill 92.5 us".
std::string explain_difference(const AllReduceEstimate& e);
// The bandwidth limit as a JSON key: nccl, channels, credit_window, nvls_node_rate, nic_line_rate.
std::string limit_key(AllReduceEstimate::Why::Limit limit);

// One ncclTopoGraph as far as the tuner cares (search.cc output).
struct NcclGraph {
  int nchannels = 0;
  double bw_intra = 0;  // bytes/s per channel inside the node
  double bw_inter = 0;  // bytes/s per channel across nodes
};

// Everything ncclTopoTuneModel produces for all-reduce, plus the inputs it used.
struct NcclTuning {
  NcclGraph ring, tree, nvls, collnet_direct, collnet_chain;
  int comm_channels = 1;  // comm->nChannels after ncclTopoPostset doubling and MIN/MAX_NCHANNELS
  int nvls_channels = 0;
  // [algo][proto]; bandwidth 0 = disabled. latency in seconds, bandwidth in bytes/s (algorithm bw).
  std::array<std::array<double, kNumProtos>, kNumAlgos> latency{};
  std::array<std::array<double, kNumProtos>, kNumAlgos> bandwidth{};
  std::array<std::array<int, kNumProtos>, kNumAlgos> max_threads{};
  std::array<std::array<double, kNumProtos>, kNumAlgos> thread_threshold{};  // bytes per thread
  double simple_buffsize = 4.0 * 1024 * 1024;  // comm->buffSizes[NCCL_PROTO_SIMPLE] (NCCL_BUFFSIZE)
};

// Validates the topology (throws std::invalid_argument naming the field and value).
void validate(const NcclTopology& topo);
NcclTuning tune_model(const NcclTopology& topo, const NcclSettings& settings = {});

AllReduceEstimate predict_allreduce(const NcclTopology& topo, double bytes, const NcclSettings& settings = {});

// Any modelled function (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST). `bytes` is NCCL's
// nBytes (src/include/enqueue.h ncclFuncMaxSendRecvCount x element size): all-reduce and broadcast
// the buffer; all-gather the whole OUTPUT (nranks x the per-rank send size); reduce-scatter the
// whole INPUT of one rank (nranks x the per-rank result). That is also
// nccl-tests' "size" column (src/common.cu prints max(sendBytes, expectedBytes)). The estimate's
// reduce_scatter_time / all_gather_time carry the whole time for the one-phase functions.
// NcclSettings::algos is the all-reduce list (config::allreduce_algos): for all-gather and
// reduce-scatter it applies where it names an algorithm that runs them, else NCCL's defaults stay.
AllReduceEstimate predict_collective(Func func, const NcclTopology& topo, double bytes,
                                     const NcclSettings& settings = {});
std::vector<AllReduceEstimate> collective_candidates(Func func, const NcclTopology& topo, double bytes,
                                                     const NcclSettings& settings = {});
NcclTuning tune_model(const NcclTopology& topo, const NcclSettings& settings, Func func);

// What the net plugin did to NCCL's pick at this size (`collective --explain` "plugin:"): the pick
// with the plugin, the pick without its region tuner, and "NCCL alone", without the region tuner
// and without the latency the plugin reports (the NIC's own; NOTES.md "EFA through aws-ofi-nccl"
// items 2 and 5). Everything else the plugin does (rails grouped, forced NCCL settings) stays:
// it is what NCCL sees of the hardware. `plugin` empty: no net plugin, or one rank.
struct PluginPickEffect {
  std::string plugin;                // e.g. "aws-ofi-nccl/p5"
  std::string pick;                  // "Tree/LL128": what NCCL runs
  std::string without_region_tuner;  // NCCL's pick with the reported latency, no region tuner
  std::string nccl_alone;            // NCCL's pick with neither
  bool region_forced = false;        // the region tuner set the pick's cost to 0
  std::string region_tuner;          // "forced", "outside its enabled regions", or why it does not apply
  double reported_latency = 0;       // seconds NCCL added to latencyInter (0: it did not read it)
  std::string effect;                // "region_tuner", "reported_latency" or "none"
  int channels = 0;                  // the channels the region tuner set with its pick (0: NCCL's own)
  std::string efa_step_from;         // the platform whose EFA step is borrowed (p6: "p5en"; "" = own)
  std::string text;                  // the --explain line
};
PluginPickEffect plugin_pick_effect(Func func, const NcclTopology& topo, double bytes,
                                    const NcclSettings& settings = {});
// Every enabled (algo, proto), sorted by NCCL's model time, for explanation tables.
std::vector<AllReduceEstimate> allreduce_candidates(const NcclTopology& topo, double bytes,
                                                    const NcclSettings& settings = {});

// nccl-tests doc/PERFORMANCE.md definitions.
// NCCL's (and aws-ofi-nccl's) log2i: floor(log2(n)), -1 for n <= 0.
int log2i(long long n);
double algbw(double bytes, double time);
double busbw_allreduce(double algbw, int nranks);
// nccl-tests' bus bandwidth of `func` (src/all_reduce.cu AllReduceGetBw: x 2(n-1)/n;
// src/all_gather.cu AllGatherGetBw and src/reduce_scatter.cu ReduceScatterGetBw: x (n-1)/n, with
// algbw = count x typesize x nranks / time, i.e. the size column over the time).
double busbw(Func func, double algbw, int nranks);

// Result of calibrate(): the fitted knobs and how well they reproduce the measurements.
struct NcclFit {
  NcclTopology topology;                // start with the fitted knobs
  std::vector<double> relative_errors;  // (predicted - measured) / measured per input point
  double rms_relative_error = 0;
  double median_abs_relative_error = 0;
  int iterations = 0;
};

// One measured all-reduce: size, time, and how the run was launched (nccl-tests -g; 0 = the
// topology's gpus_per_process; nccl-tests -G: 1 replayed from a CUDA graph, 0 eager, -1 = the
// topology's cuda_graph).
struct CalibrationPoint {
  double bytes = 0;
  double seconds = 0;
  int gpus_per_process = 0;
  int cuda_graph = -1;
};

// The topology a point was measured on: its launch mode over `t`'s.
NcclTopology as_launched(const NcclTopology& t, const CalibrationPoint& pt);
// Whether a host step per GPU precedes each call (what bounds -g G runs): eager launches, or a
// CUDA graph across nodes (NcclTopology::cuda_graph).
bool host_steps(const NcclTopology& t);

// Fits what the hardware achieves to measurements by a robust (soft L1) fit of log(predicted/measured)
// (deterministic Nelder-Mead, restarted). NCCL's pick stays NCCL's (it comes from the topology,
// not from measured speed): the fit sets the post-pick knobs. Stage 1: achieved_all (bandwidth
// factor, latency offset) and, when a point was launched with gpus_per_process > 1,
// launch_overhead. Stage 2 adds achieved[algo][proto] for every pair picked for >= 2 measured
// sizes (a weak prior keeps each near stage 1). The pre-pick knobs of `start` are kept.
// Throws std::invalid_argument on empty or non-positive data.
NcclTopology calibrate(const NcclTopology& start, const std::vector<CalibrationPoint>& points, NcclFit* fit = nullptr,
                       const NcclSettings& settings = {});
NcclTopology calibrate(const NcclTopology& start, const std::vector<std::pair<double, double>>& size_time_pairs,
                       NcclFit* fit = nullptr, const NcclSettings& settings = {});

}  // namespace ddpsim::collectives
