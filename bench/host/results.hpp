#pragma once
// The results file, format "ddpbench-results/1" (bench/README.md documents every field). It embeds
// everything a simulation of the same case needs: hardware, the full configuration and the data.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "args.hpp"
#include "buckets.hpp"
#include "nccl_format.hpp"

namespace ddpbench {

inline constexpr const char* kResultsFormat = "ddpbench-results/1";

struct HardwareInfo {
  std::string gpu_name;
  int sm_count = 0;
  uint64_t memory_bytes = 0;
  double hbm_bandwidth_Bps_peak = 0;  // 2 x memory clock x bus width / 8 (DDR); 0 when unknown
  int compute_capability_major = 0, compute_capability_minor = 0;
  std::string driver_version, cuda_runtime_version, nccl_version;
  int ngpus = 0, nnodes = 1, gpus_per_node = 0;
  std::vector<std::vector<int>> peer_access;  // cudaDeviceCanAccessPeer matrix (1 on the diagonal)
  std::vector<std::string> pci_bus_ids;
  std::string nvlink_note;
};

nlohmann::json hardware_json(const HardwareInfo& h);

// Peak HBM bandwidth in bytes/s from cudaDevAttrMemoryClockRate (kHz) and the bus width (bits).
double peak_memory_bandwidth(int memory_clock_khz, int bus_width_bits);

struct ContentionRow {
  std::string kind;        // foreground kernel: gemm, conv_gemm, attention, elementwise, normalisation
  std::string background;  // "nccl_allreduce" (>= 2 GPUs) or "copy_kernel" (1 GPU)
  std::string note;
  double fg_flops = 0;
  uint64_t bg_bytes = 0;
  double fg_alone_s = 0, fg_beside_s = 0;
  double bg_alone_s = 0, bg_beside_s = 0;
};
nlohmann::json contention_json(const ContentionRow& r);  // adds the slowdown factors

struct StepBucketTiming {
  Bucket bucket;
  double ready_s = 0, start_s = 0, end_s = 0;  // relative to the start of the step
  double alone_s = 0;                          // this bucket's all-reduce timed alone
};

struct StepCase {
  CapSpec cap;
  std::vector<uint64_t> limits;
  double step_time_s = 0, compute_only_s = 0, comm_alone_s = 0;
  double forward_s = 0, backward_end_s = 0;
  std::vector<double> step_times_s, compute_only_times_s;  // every timed iteration (rank 0)
  std::vector<double> rank_step_time_s;                    // median per rank
  // Every rank's compute-only iterations, one array per rank (ddpsim validate's rank jitter).
  std::vector<std::vector<double>> rank_compute_only_times_s;
  std::vector<StepBucketTiming> buckets;
  double exposed_comm_s() const { return step_time_s - compute_only_s; }
  // 1 - exposed/comm_alone, unclamped (it can drop below 0 when contention slows compute).
  double overlap_ratio() const { return comm_alone_s > 0 ? 1.0 - exposed_comm_s() / comm_alone_s : 0.0; }
};
nlohmann::json step_case_json(const StepCase& c);

class ResultsWriter {
 public:
  ResultsWriter(std::string mode, const HardwareInfo& hw, nlohmann::json config);
  void add_allreduce_row(const AllreduceRow& r);
  void set_layers(nlohmann::json measured_model, nlohmann::json per_layer_detail);
  void add_contention(const ContentionRow& r);
  void set_step_model(nlohmann::json measured_model);
  void add_step_case(const StepCase& c);
  const nlohmann::json& json() const { return root_; }
  std::string dump() const { return root_.dump(2); }
  // Writes the document; throws std::runtime_error naming the path when it cannot.
  void write(const std::string& path) const;

 private:
  nlohmann::json root_;
};

}  // namespace ddpbench
