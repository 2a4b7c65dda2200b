#pragma once
// Inline scenarios for SimGrid-backed tests: a synthetic model and a cluster with chosen figures.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "app/sweep.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "core/json_reader.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"

namespace ddpsim::testing {

using core::Json;

// A model of `layers` layers, each owning one float32 parameter of `numel` elements, with the
// given forward/backward times (measured, at batch 1). Gradients become ready last layer first.
inline Json synthetic_model(int layers, long long numel, double fwd_s, double bwd_s) {
  Json params = Json::array(), ls = Json::array(), order = Json::array();
  for (int i = 0; i < layers; ++i) {
    params.push_back({{"name", "layer" + std::to_string(i) + ".weight"}, {"shape", {numel}}, {"dtype", "float32"}});
    ls.push_back({{"name", "layer" + std::to_string(i)},
                  {"type", "linear"},
                  {"params", {i}},
                  {"fwd_time_s", fwd_s},
                  {"bwd_time_s", bwd_s}});
  }
  for (int i = layers - 1; i >= 0; --i) order.push_back(i);
  return {{"format", "ddpsim-model/1"}, {"name", "synthetic"}, {"batch_size", 1},
          {"params", params},           {"layers", ls},        {"grad_ready_order", order}};
}

inline Json link(const std::string& name, const std::string& kind, const std::string& bw, const std::string& lat) {
  return {{"name", name}, {"kind", kind}, {"bandwidth", bw}, {"latency", lat}};
}

inline Json cluster(int nodes, int gpn, const Json& intra, const Json& inter, int nics = 1) {
  Json c{{"name", "test-cluster"},
         {"gpu",
          {{"name", "test-gpu"},
           {"arch", "ampere"},
           {"peak_flops", {{"float32", "100TFLOPS"}}},
           {"hbm_bandwidth", "2000GBps"}}},
         {"nodes", nodes},
         {"gpus_per_node", gpn},
         {"intra_node", {{"fabric", "nvswitch"}, {"link", intra}, {"links_per_gpu", 1}}}};
  if (!inter.is_null()) c["inter_node"] = {{"link", inter}, {"nics_per_node", nics}};
  return c;
}

// Simulates each scenario in its own child process (one SimGrid Engine per process) and returns
// the JSON reports in order; a failed child fails the test.
inline std::vector<Json> simulate_in_children(const std::vector<config::Scenario>& scs) {
  std::vector<std::function<Json()>> work;
  for (const auto& sc : scs) work.push_back([sc] { return report::to_json(engine::simulate(sc)); });
  std::vector<Json> out;
  for (auto& r : app::run_in_children(work, 2)) {
    EXPECT_TRUE(r.ok) << r.error;
    out.push_back(r.value);
  }
  return out;
}

inline config::Scenario scenario(const Json& doc) {
  config::Catalog cat(config::Catalog::default_root());
  return cat.scenario_from_json(doc, "test-scenario", std::filesystem::current_path());
}

// The cluster of `cluster(nodes, 8, intra, inter, 8)` (8-GPU servers with 8 NICs) under a fabric
// given as "key=value" settings (`--set fabric.*` syntax), as a scenario's spec resolves it.
inline config::ClusterSpec cluster_on_fabric(int nodes, const Json& intra, const Json& inter,
                                             const std::vector<std::string>& fabric) {
  Json doc = cluster(nodes, 8, intra, inter, 8);
  Json f = Json::object();
  for (const auto& kv : fabric) {
    const auto eq = kv.find('=');
    f[kv.substr(0, eq)] = config::parse_override_value(kv.substr(eq + 1));
  }
  doc["fabric"] = f;
  Json sc{{"model", synthetic_model(2, 1000, 1e-4, 1e-4)}, {"cluster", doc}};
  return scenario(sc).cluster;
}

}  // namespace ddpsim::testing
