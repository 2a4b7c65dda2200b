#pragma once
// Test helpers (header-only): synthetic specs for the bucketizer and compute model, inline JSON
// documents for models, GPUs, links, clusters and scenarios, temporary config files, and a helper
// that runs a callable expecting a ConfigError.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/catalog.hpp"
#include "config/specs.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::test_support {

using core::Json;

// ---------------------------------------------------------------- synthetic specs

// A 1-D parameter of `numel` elements.
inline config::ParamSpec param(const std::string& name, int64_t numel, config::DType dtype = config::DType::FLOAT32,
                               bool requires_grad = true) {
  config::ParamSpec p;
  p.name = name;
  p.shape = {numel};
  p.numel = numel;
  p.dtype = dtype;
  p.requires_grad = requires_grad;
  return p;
}

// A model whose parameters are `params` (in registration order), one layer per parameter, and whose
// gradients become ready in `ready_order` (default: reverse registration order of requires_grad params).
inline config::ModelSpec synthetic_model(std::vector<config::ParamSpec> params,
                                         std::optional<std::vector<int>> ready_order = std::nullopt) {
  config::ModelSpec m;
  m.name = "synthetic";
  m.batch_size = 1;
  m.params = std::move(params);
  for (size_t i = 0; i < m.params.size(); ++i) {
    config::LayerSpec l;
    l.name = "layer" + std::to_string(i);
    l.params = {static_cast<int>(i)};
    m.layers.push_back(l);
  }
  if (ready_order) {
    m.grad_ready_order = *ready_order;
  } else {
    for (int i = static_cast<int>(m.params.size()) - 1; i >= 0; --i)
      if (m.params[static_cast<size_t>(i)].requires_grad) m.grad_ready_order.push_back(i);
  }
  return m;
}

// Parameter index lists of a bucket plan, for compact comparisons.
template <class Buckets>
std::vector<std::vector<int>> indices_of(const Buckets& buckets) {
  std::vector<std::vector<int>> out;
  for (const auto& b : buckets) out.push_back(b.param_indices);
  return out;
}

// ---------------------------------------------------------------- inline JSON documents

// A valid three-parameter, two-layer model: fc1.weight [4,3], fc1.bias [4] in layer 0 and
// fc2.weight [2,4] in layer 1; gradients ready in the order fc2.weight, fc1.weight, fc1.bias.
inline Json model_json() {
  return Json::parse(R"({
    "format": "ddpsim-model/1",
    "name": "tiny",
    "batch_size": 2,
    "params": [
      {"name": "fc1.weight", "shape": [4, 3], "dtype": "float32"},
      {"name": "fc1.bias", "shape": [4], "dtype": "float32", "requires_grad": true},
      {"name": "fc2.weight", "shape": [2, 4], "dtype": "float32"}
    ],
    "layers": [
      {"name": "fc1", "type": "linear", "params": [0, 1], "fwd_flops": 48, "bwd_flops": 96},
      {"name": "fc2", "type": "linear", "params": [2], "fwd_flops": 32, "bwd_flops": 64}
    ],
    "grad_ready_order": [2, 0, 1]
  })");
}

inline Json gpu_json() {
  return Json::parse(R"({
    "name": "testgpu",
    "arch": "ampere",
    "peak_flops": {"float32": "10TFLOPS"},
    "hbm_bandwidth": "1000GBps",
    "memory": "16GiB",
    "sm_count": 80
  })");
}

inline Json link_json(const std::string& name = "testlink", const std::string& kind = "nvlink",
                      const std::string& bandwidth = "20GBps", const std::string& latency = "3us") {
  return Json{{"name", name}, {"kind", kind}, {"bandwidth", bandwidth}, {"latency", latency}};
}

// A one-node cluster of `gpus_per_node` GPUs with inline GPU and link objects; no inter_node.
inline Json cluster_json(int nodes = 1, int gpus_per_node = 4) {
  Json c{{"name", "testcluster"}, {"gpu", gpu_json()}, {"nodes", nodes}, {"gpus_per_node", gpus_per_node}};
  c["intra_node"] = Json{{"fabric", "nvswitch"}, {"link", link_json()}, {"links_per_gpu", 2}};
  return c;
}

// A scenario using the bundled resnet50 model and dgx-a100 cluster (one node).
inline Json scenario_json() {
  return Json::parse(R"({
    "name": "test",
    "model": "resnet50",
    "cluster": "dgx-a100",
    "nodes": 1,
    "training": {"batch_size": 32, "compute_dtype": "float32", "optimizer": "sgd"}
  })");
}

// ---------------------------------------------------------------- files and errors

// A fresh folder under the system temp directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path_ = std::filesystem::temp_directory_path() /
            ("ddpsim_test_" + std::to_string(stamp) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p);
    out << text;
    return p;
  }
  std::filesystem::path write(const std::string& name, const Json& doc) const { return write(name, doc.dump(2)); }

 private:
  std::filesystem::path path_;
};

// The catalog over the bundled data of the source tree.
inline config::Catalog source_catalog() { return config::Catalog(DDPSIM_SOURCE_DIR); }

// Runs `f`, which must throw core::ConfigError; returns the error (or a single-problem error
// saying what happened instead, after recording a test failure).
inline core::ConfigError expect_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::ConfigError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ConfigError, got another exception: " << e.what();
    return core::ConfigError(std::string("<other exception>"));
  }
  ADD_FAILURE() << "expected ConfigError, nothing was thrown";
  return core::ConfigError(std::string("<nothing thrown>"));
}

// gtest predicate-style check that `text` contains every one of `parts`.
inline ::testing::AssertionResult contains_all(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts)
    if (text.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "\"" << p << "\" not found in:\n" << text;
  return ::testing::AssertionSuccess();
}

// The entries of an "unknown key; allowed keys here: a, b, c" message: {"a", "b", "c"}.
inline std::vector<std::string> allowed_keys(const std::string& message) {
  const std::string marker = "allowed keys here: ";
  const auto at = message.find(marker);
  if (at == std::string::npos) return {};
  std::string list = message.substr(at + marker.size());
  list = list.substr(0, list.find('\n'));
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const auto comma = list.find(", ", start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  return out;
}

// gtest predicate-style check that every one of `parts` is a whole entry of `entries`.
inline ::testing::AssertionResult contains_all(const std::vector<std::string>& entries,
                                               const std::vector<std::string>& parts) {
  for (const auto& p : parts) {
    bool found = false;
    for (const auto& e : entries) found = found || e == p;
    if (!found) {
      auto failure = ::testing::AssertionFailure() << "\"" << p << "\" is not an entry of [";
      for (size_t i = 0; i < entries.size(); ++i) failure << (i ? ", " : "") << entries[i];
      return failure << "]";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ddpsim::test_support
