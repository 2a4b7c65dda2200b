#pragma once
// The two tables the NCCL model is driven by (nccl_model.cpp):
//  - tuner eras: per NCCL release range, the tuner tables and rules of that release (tuning.cc,
//    enqueue.cc, nvls.cc change between releases), chosen once per model from
//    NcclTopology::nccl_version;
//  - algorithm traits: per collective function and NCCL algorithm, its graph (topology), its
//    bandwidth and latency rules, its channel rule and the achieved-time mechanisms that apply.
// Adding an algorithm is one traits entry plus its rule functions (nccl_model.cpp, kAllReduceAlgos);
// adding a function is one traits table for it (kAllGatherAlgos serves AllGather and ReduceScatter,
// which tuning.cc models alike).
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"

namespace ddpsim::collectives {

// tuning.cc's tables and refinement constants of a release line (nccl_model.cpp: the current
// ones, and 2.8.3's).
struct TunerTables;

// One NCCL release range and what its tuner does differently. Versions are NCCL_VERSION_CODE
// (major*10000 + minor*100 + patch); version 0 ("current") is the newest era.
struct TunerEra {
  int first_version = 0;      // inclusive
  int end_version = 0;        // exclusive; 0 = open (the newest era)
  const char* releases = "";  // e.g. "2.5-2.8"
  const char* source = "";    // the NVIDIA/nccl files and tags read for this era
  const TunerTables* tables = nullptr;
  bool tuner = true;    // false: 2.4's fixed thresholds pick (enqueue.cc getKernelInfo)
  bool ll128 = true;    // LL128 exists (2.5+) and may default on
  bool nvls = true;     // NVLS / NVLS tree exist (2.17+)
  bool collnet = true;  // CollNet algorithms modelled (the tables read are 2.18+)
  // NVLS tuner rows: true (2.28.3+) nvlsEfficiency x 2 and bus -> algorithm bw by nRanks/nsteps;
  // false (2.17-2.27) min(bwIntra, bwInter) and 5/6.
  bool nvls_bus_per_step = true;
  bool nvls_sm100_nvl = true;        // 2.27+: 24 NVLS channels on Blackwell inside one NVLink domain
  bool nvls_sm100_tuning = true;     // 2.30.3+: ncclNvlsTreeSm100Tuning across nodes
  bool simple_fixed_slices = false;  // 2.4: GenericOp walks every slice of a chunk (achieved time)
  // NET hwLat replaced per algorithm (0 = the table's): NVLS tree's was 14 us before 2.28.9.
  double net_hw_lat_override[kNumAlgos] = {};
  // AllGather and ReduceScatter (tuning.cc ncclTopoTuneModel's per-function loop, read at each
  // era's tag): NVLS runs them in 2.17 and from 2.19 (2.18's loop skips every algorithm but Ring);
  // its bus -> algorithm ratio is .75 in 2.17 (every function), 5/6 in 2.19-2.22, and from 2.23
  // none ("Convert bus BW to algorithm BW" skips non-Ring AllGather / ReduceScatter).
  bool ag_rs_nvls = true;
  double ag_rs_nvls_ratio = 1.0;
};

// The era whose tables a given NCCL_VERSION_CODE runs (0 = current). Throws std::invalid_argument
// for a version no era covers (below 2.0).
const TunerEra& tuner_era(int nccl_version);
const std::vector<TunerEra>& tuner_eras();  // every era, oldest first

// Whether the model has rules for `algo` running `func` (all-reduce: every algorithm; all-gather
// and reduce-scatter: Ring and NVLS; broadcast: none).
bool modelled(Func func, Algo algo);
// NCCL's NCCL_ALGO_* index (Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5):
// enqueue.cc scans algorithms in this order, so it breaks ties between equal times.
int nccl_algo_index(Algo algo);

}  // namespace ddpsim::collectives
