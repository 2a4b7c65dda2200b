// `ddpsim show`: a model's layers with their parameters, FLOPs and measured times.
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

int cmd_show(const CommonOptions& common, const std::string& name, const std::string& json_out) {
  {
    std::vector<std::string> out_paths;
    for (const std::string* p : {&json_out})
      if (!p->empty()) out_paths.push_back(*p);
    report::check_output_paths(out_paths);  // before the work, so a bad path costs nothing
  }
  auto cat = common.catalog();
  auto m = cat.load_model(cat.resolve(config::Kind::MODEL, name));
  Json layers = Json::array();
  std::ostringstream o;
  o << "model " << m.name << (m.source.empty() ? "" : " (" + m.source + ")") << ": " << m.params.size()
    << " parameter tensors, " << m.total_numel() << " parameters, " << m.layers.size()
    << " layers; counts per sample (export batch " << m.batch_size << ")"
    << (m.measured_on.empty() ? "" : "; measured on " + m.measured_on) << "\n";
  o << "  idx  layer                                    type         params   param MiB  fwd MFLOP  bwd MFLOP   fwd "
       "time   bwd time\n";
  double tf = 0, tb = 0, tp = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const auto& l = m.layers[i];
    double pb = 0;
    int64_t pn = 0;
    for (int p : l.params) pb += m.params[p].bytes(), pn += m.params[p].numel;
    const double f = l.fwd_flops / m.batch_size, b = l.bwd_flops / m.batch_size;
    tf += f, tb += b, tp += pb;
    char line[256];
    std::snprintf(line, sizeof line, "  %3zu  %-40.40s %-11s %8lld %11.3f %10.2f %10.2f %10s %10s\n", i, l.name.c_str(),
                  config::to_string(l.type).c_str(), static_cast<long long>(pn), pb / 1048576.0, f / 1e6, b / 1e6,
                  l.fwd_time ? core::format_time(*l.fwd_time).c_str() : "-",
                  l.bwd_time ? core::format_time(*l.bwd_time).c_str() : "-");
    o << line;
    Json lj{{"index", i},
            {"name", l.name},
            {"type", config::to_string(l.type)},
            {"params", l.params},
            {"param_bytes", pb},
            {"fwd_flops_per_sample", f},
            {"bwd_flops_per_sample", b}};
    if (l.fwd_time) lj["fwd_time_s"] = *l.fwd_time;
    if (l.bwd_time) lj["bwd_time_s"] = *l.bwd_time;
    layers.push_back(lj);
  }
  char tot[200];
  std::snprintf(tot, sizeof tot, "  total%49s %11.3f %10.2f %10.2f   (GFLOP/sample: %.3f forward, %.3f backward)\n", "",
                tp / 1048576.0, tf / 1e6, tb / 1e6, tf / 1e9, tb / 1e9);
  o << tot;
  Json doc{{"model", m.name},
           {"params", m.params.size()},
           {"numel", m.total_numel()},
           {"batch_size", m.batch_size},
           {"fwd_flops_per_sample", tf},
           {"bwd_flops_per_sample", tb},
           {"layers", layers}};
  if (!json_out.empty()) report::write_output(json_out, report::json_text(doc, 2, "show"));
  if (json_out != "-") std::cout << o.str();
  return 0;
}

}  // namespace ddpsim::app
