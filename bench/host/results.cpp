#include "results.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace ddpbench {

double peak_memory_bandwidth(int memory_clock_khz, int bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return 0.0;
  return 2.0 * static_cast<double>(memory_clock_khz) * 1e3 * static_cast<double>(bus_width_bits) / 8.0;
}

nlohmann::json hardware_json(const HardwareInfo& h) {
  nlohmann::json peer = nlohmann::json::array();
  for (const auto& row : h.peer_access) peer.push_back(row);
  bool all_peer = h.ngpus > 1;
  for (const auto& row : h.peer_access)
    for (int v : row) all_peer = all_peer && v != 0;
  return {{"gpu_name", h.gpu_name},
          {"sm_count", h.sm_count},
          {"memory_bytes", h.memory_bytes},
          {"hbm_bandwidth_Bps_peak", h.hbm_bandwidth_Bps_peak},
          {"compute_capability",
           std::to_string(h.compute_capability_major) + "." + std::to_string(h.compute_capability_minor)},
          {"driver_version", h.driver_version},
          {"cuda_runtime_version", h.cuda_runtime_version},
          {"nccl_version", h.nccl_version},
          {"ngpus", h.ngpus},
          {"nnodes", h.nnodes},
          {"gpus_per_node", h.gpus_per_node},
          {"nvlink",
           {{"peer_access", peer},
            {"all_pairs_peer_capable", all_peer},
            {"pci_bus_ids", h.pci_bus_ids},
            {"note", h.nvlink_note}}}};
}

nlohmann::json contention_json(const ContentionRow& r) {
  auto ratio = [](double a, double b) { return b > 0 ? nlohmann::json(a / b) : nlohmann::json(nullptr); };
  return {{"kind", r.kind},
          {"background", r.background},
          {"note", r.note},
          {"fg_flops", r.fg_flops},
          {"bg_bytes", r.bg_bytes},
          {"compute_alone_s", r.fg_alone_s},
          {"compute_beside_comm_s", r.fg_beside_s},
          {"compute_slowdown", ratio(r.fg_beside_s, r.fg_alone_s)},
          {"comm_alone_s", r.bg_alone_s},
          {"comm_beside_compute_s", r.bg_beside_s},
          {"comm_slowdown", ratio(r.bg_beside_s, r.bg_alone_s)}};
}

nlohmann::json step_case_json(const StepCase& c) {
  nlohmann::json buckets = nlohmann::json::array();
  for (size_t i = 0; i < c.buckets.size(); ++i) {
    const auto& b = c.buckets[i];
    buckets.push_back({{"index", i},
                       {"bytes", b.bucket.bytes},
                       {"num_tensors", b.bucket.params.size()},
                       {"dtype", b.bucket.dtype},
                       {"size_limit", b.bucket.size_limit},
                       {"params", b.bucket.params},
                       {"ready_s", b.ready_s},
                       {"start_s", b.start_s},
                       {"end_s", b.end_s},
                       {"alone_s", b.alone_s}});
  }
  return {{"bucket_cap_mb", c.cap.mb},
          {"bucket_cap_is_default", c.cap.is_default},
          {"limits_bytes", c.limits},
          {"step_time_s", c.step_time_s},
          {"compute_only_s", c.compute_only_s},
          {"comm_alone_s", c.comm_alone_s},
          {"exposed_comm_s", c.exposed_comm_s()},
          {"overlap_ratio", c.comm_alone_s > 0 ? nlohmann::json(c.overlap_ratio()) : nlohmann::json(nullptr)},
          {"forward_s", c.forward_s},
          {"backward_end_s", c.backward_end_s},
          {"step_times_s", c.step_times_s},
          {"compute_only_times_s", c.compute_only_times_s},
          {"rank_step_time_s", c.rank_step_time_s},
          {"rank_compute_only_times_s", c.rank_compute_only_times_s},
          {"buckets", buckets}};
}

ResultsWriter::ResultsWriter(std::string mode, const HardwareInfo& hw, nlohmann::json config) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  root_ = {{"format", kResultsFormat},
           {"mode", std::move(mode)},
           {"created_utc", buf},
           {"hardware", hardware_json(hw)},
           {"config", std::move(config)}};
}

void ResultsWriter::add_allreduce_row(const AllreduceRow& r) {
  if (!root_.contains("allreduce")) root_["allreduce"] = nlohmann::json::array();
  root_["allreduce"].push_back(row_json(r));
}

void ResultsWriter::set_layers(nlohmann::json measured_model, nlohmann::json per_layer_detail) {
  root_["layers"] = std::move(measured_model);
  root_["layer_plans"] = std::move(per_layer_detail);
}

void ResultsWriter::add_contention(const ContentionRow& r) {
  if (!root_.contains("contention")) root_["contention"] = nlohmann::json::array();
  root_["contention"].push_back(contention_json(r));
}

void ResultsWriter::set_step_model(nlohmann::json measured_model) {
  root_["step"]["model"] = std::move(measured_model);
  if (!root_["step"].contains("cases")) {
    root_["step"]["caps"] = nlohmann::json::array();
    root_["step"]["cases"] = nlohmann::json::array();
  }
}

void ResultsWriter::add_step_case(const StepCase& c) {
  if (!root_["step"].contains("cases")) {
    root_["step"]["caps"] = nlohmann::json::array();
    root_["step"]["cases"] = nlohmann::json::array();
  }
  root_["step"]["caps"].push_back(c.cap.is_default ? nlohmann::json("default") : nlohmann::json(c.cap.mb));
  root_["step"]["cases"].push_back(step_case_json(c));
}

void ResultsWriter::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << dump() << "\n";
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace ddpbench
