#include "model.hpp"

#include <sstream>

#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "errors.hpp"

namespace ddpbench {

// The simulator's dtype table (config/specs.hpp) is the one home of element sizes.
int dtype_bytes(const std::string& dtype) {
  if (auto t = ddpsim::config::parse_dtype(dtype)) return ddpsim::config::dtype_size(*t);
  std::string known;
  for (const auto& n : ddpsim::config::dtype_names()) known += (known.empty() ? "" : ", ") + n;
  throw ModelError("unknown dtype '" + dtype + "' (known: " + known + ")");
}

int64_t Model::token_seq_len() const {
  if (spec.input_dtype == ddpsim::config::DType::INT64 && spec.input_shape.size() == 2) return spec.input_shape[1];
  return 0;
}

Model model_from_json(const nlohmann::json& doc, const std::string& origin) {
  ddpsim::core::Diagnostics d(origin);
  Model m{ddpsim::config::parse_model(doc, d), doc};
  if (!d.ok()) throw ModelError(ddpsim::core::ConfigError(d.problems()).what());
  m.spec.file = origin;
  return m;
}

Model load_model(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = ddpsim::core::read_json_file(path);
  } catch (const ddpsim::core::ConfigError& e) {
    throw ModelError(e.what());
  }
  return model_from_json(doc, path);
}

nlohmann::json synthetic_model(const std::string& spec, int64_t batch) {
  const std::string what = "mlp:LAYERS:HIDDEN with LAYERS >= 1 and HIDDEN >= 1, e.g. mlp:8:4096";
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ':')) parts.push_back(item);
  auto to_pos = [&](const std::string& s) -> int64_t {
    try {
      size_t pos = 0;
      const long long v = std::stoll(s, &pos);
      if (pos == s.size() && v >= 1) return v;
    } catch (const std::exception&) {
    }
    throw ArgError("--synthetic: '" + spec + "' is not " + what);
  };
  if (parts.size() != 3 || parts[0] != "mlp") throw ArgError("--synthetic: '" + spec + "' is not " + what);
  const int64_t nl = to_pos(parts[1]);
  const int64_t h = to_pos(parts[2]);
  const double b = static_cast<double>(batch), hd = static_cast<double>(h);
  nlohmann::json params = nlohmann::json::array(), layers = nlohmann::json::array(), order = nlohmann::json::array();
  for (int64_t i = 0; i < nl; ++i) {
    const std::string n = "fc" + std::to_string(i);
    params.push_back({{"name", n + ".weight"}, {"shape", {h, h}}, {"dtype", "float32"}, {"requires_grad", true}});
    params.push_back({{"name", n + ".bias"}, {"shape", {h}}, {"dtype", "float32"}, {"requires_grad", true}});
    const bool first = i == 0;  // the input needs no gradient: weight grad only (models/README.md)
    const double gemm = 2 * b * hd * hd;
    layers.push_back({{"name", n},
                      {"type", "linear"},
                      {"params", {2 * i, 2 * i + 1}},
                      {"fwd_flops", gemm + b * hd},
                      {"bwd_flops", (first ? 1 : 2) * gemm + b * hd},
                      {"fwd_bytes", 8 * b * hd},
                      {"bwd_bytes", (first ? 8 : 16) * b * hd + 4 * b * hd}});
    layers.push_back({{"name", "relu" + std::to_string(i)},
                      {"type", "elementwise"},
                      {"params", nlohmann::json::array()},
                      {"fwd_flops", b * hd},
                      {"bwd_flops", b * hd},
                      {"fwd_bytes", 8 * b * hd},
                      {"bwd_bytes", 12 * b * hd}});
  }
  for (int64_t i = nl - 1; i >= 0; --i) {
    order.push_back(2 * i + 1);  // bias gradient first (it needs only grad_out)
    order.push_back(2 * i);
  }
  return {{"format", "ddpsim-model/1"},
          {"name", spec},
          {"source", "ddpbench --synthetic " + spec},
          {"exported_with", {{"script", "ddpbench"}, {"input_shape", {batch, h}}, {"input_dtype", "float32"}}},
          {"batch_size", batch},
          {"params", params},
          {"buffers", nlohmann::json::array()},
          {"layers", layers},
          {"grad_ready_order", order}};
}

nlohmann::json measured_profile(const Model& m, const std::vector<double>& fwd_s, const std::vector<double>& bwd_s,
                                const std::string& gpu_name, int64_t batch, const std::string& dtype) {
  nlohmann::json out = m.doc;
  // The counts, the kernel records and `batch_size` stay at the file's batch; the times are at
  // `measured_batch_size`, which ddpsim scales from on its own (as `ddpsim import-trace` writes
  // them). Rescaling only the counts left the kernel records at the file's batch under a
  // batch_size that said otherwise: the per-kernel estimate from such a file was priced at the
  // file's batch.
  for (size_t i = 0; i < out["layers"].size() && i < fwd_s.size() && i < bwd_s.size(); ++i) {
    out["layers"][i]["fwd_time_s"] = fwd_s[i];
    out["layers"][i]["bwd_time_s"] = bwd_s[i];
  }
  out["measured_on"] = gpu_name;
  out["measured_batch_size"] = batch;
  out["measured_dtype"] = dtype;
  return out;
}

}  // namespace ddpbench
