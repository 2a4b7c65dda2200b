#include "model.hpp"

#include <fstream>
#include <sstream>

#include "config/specs.hpp"
#include "errors.hpp"

namespace ddpbench {

int64_t ModelParam::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

uint64_t ModelParam::bytes() const {
  return static_cast<uint64_t>(numel()) * static_cast<uint64_t>(dtype_bytes(dtype));
}

// The simulator's dtype table (config/specs.hpp) is the one home of element sizes.
int dtype_bytes(const std::string& dtype) {
  if (auto t = ddpsim::config::parse_dtype(dtype)) return ddpsim::config::dtype_size(*t);
  std::string known;
  for (const auto& n : ddpsim::config::dtype_names()) known += (known.empty() ? "" : ", ") + n;
  throw ModelError("unknown dtype '" + dtype + "' (known: " + known + ")");
}

int64_t Model::token_seq_len() const {
  if (input_dtype == "int64" && input_shape.size() == 2) return input_shape[1];
  return 0;
}

namespace {

// Collects every problem of a document, then throws them together.
class Problems {
 public:
  explicit Problems(std::string origin) : origin_(std::move(origin)) {}
  void add(const std::string& path, const std::string& msg) { list_.push_back(origin_ + ": " + path + ": " + msg); }
  void throw_if_any() const {
    if (list_.empty()) return;
    std::string all;
    for (const auto& p : list_) all += (all.empty() ? "" : "\n") + p;
    throw ModelError(all);
  }

 private:
  std::string origin_;
  std::vector<std::string> list_;
};

double number_or(const nlohmann::json& j, const char* key, const std::string& path, Problems& pr, bool required) {
  if (!j.contains(key)) {
    if (required) pr.add(path + "/" + key, "missing");
    return 0.0;
  }
  if (!j[key].is_number()) {
    pr.add(path + "/" + key, j[key].dump() + " is not a number");
    return 0.0;
  }
  const double v = j[key].get<double>();
  if (v < 0) pr.add(path + "/" + key, j[key].dump() + " is not >= 0");
  return v;
}

}  // namespace

Model parse_model(const nlohmann::json& j, const std::string& origin) {
  Problems pr(origin);
  Model m;
  m.raw = j;
  if (!j.is_object()) {
    pr.add("", "not a JSON object");
    pr.throw_if_any();
  }
  if (j.value("format", std::string()) != "ddpsim-model/1")
    pr.add("/format",
           (j.contains("format") ? j["format"].dump() : std::string("missing")) + " is not \"ddpsim-model/1\"");
  m.name = j.value("name", std::string("model"));
  if (j.contains("batch_size") && j["batch_size"].is_number_integer() && j["batch_size"].get<int64_t>() >= 1)
    m.batch_size = j["batch_size"].get<int64_t>();
  else
    pr.add("/batch_size",
           (j.contains("batch_size") ? j["batch_size"].dump() : std::string("missing")) + " is not an integer >= 1");
  if (j.contains("exported_with") && j["exported_with"].is_object()) {
    const auto& e = j["exported_with"];
    if (e.contains("input_shape") && e["input_shape"].is_array())
      for (const auto& d : e["input_shape"])
        if (d.is_number_integer()) m.input_shape.push_back(d.get<int64_t>());
    m.input_dtype = e.value("input_dtype", std::string("float32"));
  }

  if (!j.contains("params") || !j["params"].is_array()) {
    pr.add("/params", "missing or not an array");
  } else {
    for (size_t i = 0; i < j["params"].size(); ++i) {
      const auto& p = j["params"][i];
      const std::string path = "/params/" + std::to_string(i);
      ModelParam mp;
      mp.name = p.value("name", std::string());
      mp.dtype = p.value("dtype", std::string("float32"));
      mp.requires_grad = p.value("requires_grad", true);
      try {
        (void)dtype_bytes(mp.dtype);
      } catch (const ModelError& e) {
        pr.add(path + "/dtype", e.what());
      }
      if (!p.contains("shape") || !p["shape"].is_array()) {
        pr.add(path + "/shape", "missing or not an array");
      } else {
        for (const auto& d : p["shape"]) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0)
            pr.add(path + "/shape", d.dump() + " is not an integer >= 0");
          else
            mp.shape.push_back(d.get<int64_t>());
        }
      }
      m.params.push_back(std::move(mp));
    }
  }
  const int nparams = static_cast<int>(m.params.size());
  auto check_index = [&](const nlohmann::json& v, const std::string& path) -> int {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= nparams) {
      pr.add(path, v.dump() + " is not a parameter index in [0, " + std::to_string(nparams) + ")");
      return -1;
    }
    return v.get<int>();
  };

  if (!j.contains("layers") || !j["layers"].is_array()) {
    pr.add("/layers", "missing or not an array");
  } else {
    for (size_t i = 0; i < j["layers"].size(); ++i) {
      const auto& l = j["layers"][i];
      const std::string path = "/layers/" + std::to_string(i);
      ModelLayer ml;
      ml.name = l.value("name", std::string());
      ml.type = l.value("type", std::string("other"));
      if (l.contains("params") && l["params"].is_array())
        for (size_t k = 0; k < l["params"].size(); ++k) {
          const int idx = check_index(l["params"][k], path + "/params/" + std::to_string(k));
          if (idx >= 0) ml.params.push_back(idx);
        }
      ml.fwd_flops = number_or(l, "fwd_flops", path, pr, true);
      ml.bwd_flops = number_or(l, "bwd_flops", path, pr, true);
      ml.fwd_bytes = number_or(l, "fwd_bytes", path, pr, false);
      ml.bwd_bytes = number_or(l, "bwd_bytes", path, pr, false);
      m.layers.push_back(std::move(ml));
    }
  }

  if (j.contains("grad_ready_order") && j["grad_ready_order"].is_array()) {
    for (size_t k = 0; k < j["grad_ready_order"].size(); ++k) {
      const int idx = check_index(j["grad_ready_order"][k], "/grad_ready_order/" + std::to_string(k));
      if (idx >= 0) m.grad_ready_order.push_back(idx);
    }
  } else {
    // No recorded order: the reverse of registration order (what autograd usually produces).
    for (int i = nparams - 1; i >= 0; --i)
      if (m.params[static_cast<size_t>(i)].requires_grad) m.grad_ready_order.push_back(i);
  }
  pr.throw_if_any();
  return m;
}

Model load_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ModelError(path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ModelError(path + ": invalid JSON: " + e.what());
  }
  return parse_model(j, path);
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
  nlohmann::json out = m.raw;
  // Times are for `batch`: rescale the batch-linear counts too, so counts and times agree.
  const double scale = static_cast<double>(batch) / static_cast<double>(m.batch_size);
  if (batch != m.batch_size) {
    for (auto& l : out["layers"])
      for (const char* k : {"fwd_flops", "bwd_flops", "fwd_bytes", "bwd_bytes"})
        if (l.contains(k) && l[k].is_number()) l[k] = l[k].get<double>() * scale;
    out["batch_size"] = batch;
    if (out.contains("exported_with") && out["exported_with"].contains("input_shape") &&
        out["exported_with"]["input_shape"].is_array() && !out["exported_with"]["input_shape"].empty())
      out["exported_with"]["input_shape"][0] = batch;
  }
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
