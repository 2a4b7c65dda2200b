// `ddpsim list`: the bundled models, GPUs, links, clusters and scenarios.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

int cmd_list(const CommonOptions& common, const std::string& what) {
  auto cat = common.catalog();
  struct Entry {
    const char* title;
    config::Kind kind;
  };
  const Entry entries[] = {{"models", config::Kind::MODEL},
                           {"gpus", config::Kind::GPU},
                           {"links", config::Kind::LINK},
                           {"clusters", config::Kind::CLUSTER},
                           {"scenarios", config::Kind::SCENARIO}};
  bool any = false;
  for (const auto& e : entries) {
    if (!what.empty() && what != e.title) continue;
    any = true;
    std::cout << e.title << " (" << cat.dir(e.kind).string() << "):\n";
    for (const auto& n : cat.names(e.kind)) {
      std::string detail;
      try {
        auto path = cat.dir(e.kind) / (n + ".json");
        switch (e.kind) {
          case config::Kind::MODEL: {
            auto m = cat.load_model(path);
            double numel = static_cast<double>(m.total_numel());
            char b[160];
            double flops = 0;
            for (const auto& l : m.layers) flops += l.fwd_flops;
            std::snprintf(b, sizeof b, "%.1fM parameters in %zu tensors, %s, %zu layers, %.2f GFLOP/sample forward%s",
                          numel / 1e6, m.params.size(), core::format_bytes(m.grad_bytes()).c_str(), m.layers.size(),
                          flops / m.batch_size / 1e9, m.measured_on.empty() ? "" : ", measured");
            detail = b;
            // The size the layers were exported at (training.seq_len / image_size rescale it).
            if (m.kernel_export_size > 0)
              detail += (m.kernel_size_kind == "seq" ? ", exported at seq " : ", exported at image ") +
                        std::to_string(m.kernel_export_size);
            break;
          }
          case config::Kind::GPU: {
            auto g = cat.load_gpu(path);
            detail = config::to_string(g.arch) + ", " + std::to_string(g.sm_count) + " SMs, HBM " +
                     core::format_bandwidth(g.hbm_bandwidth);
            break;
          }
          case config::Kind::LINK: {
            auto l = cat.load_link(path);
            detail = config::to_string(l.kind) + ", " + core::format_bandwidth(l.bandwidth) + ", " +
                     core::format_time(l.latency) + " per step";
            break;
          }
          case config::Kind::CLUSTER: {
            auto c = cat.load_cluster(path);
            detail = std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) + " " + c.gpu.name + ", " +
                     config::to_string(c.fabric) + " " + c.intra_link.name +
                     (c.inter_link ? ", " + std::to_string(c.nics_per_node) + " x " + c.inter_link->name : "");
            break;
          }
          case config::Kind::SCENARIO: {
            auto j = core::read_json_file(path.string());
            detail = j.value("description", "");
            break;
          }
        }
      } catch (const std::exception& ex) {
        detail = std::string("INVALID: ") + ex.what();
      }
      std::cout << "  " << n << (detail.empty() ? "" : "  -  " + detail) << "\n";
    }
  }
  if (!any)
    throw core::ConfigError("list: \"" + what +
                            "\" is not a category; expected models, gpus, links, clusters or scenarios");
  return 0;
}

}  // namespace ddpsim::app
