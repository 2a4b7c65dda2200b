// `ddpsim show NAME`: a model's layers with their parameters, FLOPs and measured times, or a
// cluster's, GPU's or link's figures, whichever catalog has NAME (models first).
#include <cstdio>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"
#include "core/units.hpp"
#include "fabric/spec.hpp"
#include "report/views.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {
namespace {

std::string gpu_line(const config::GpuSpec& g) {
  std::string s = g.name + ": " + config::to_string(g.arch) + ", " + std::to_string(g.sm_count) + " SMs, " +
                  core::format_bytes(g.memory_bytes) + " memory, HBM " + core::format_bandwidth(g.hbm_bandwidth);
  std::string peaks;
  for (const auto& [dtype, flops] : g.peak_flops) {
    char b[64];
    std::snprintf(b, sizeof b, "%s%s %.1f TFLOPS", peaks.empty() ? "" : ", ", dtype.c_str(), flops / 1e12);
    peaks += b;
  }
  return s + "\n    peak " + peaks;
}

std::string link_line(const config::LinkSpec& l) {
  return l.name + " (" + config::to_string(l.kind) + ", " + core::format_bandwidth(l.bandwidth) + " per direction, " +
         core::format_time(l.latency) + " per ring step)";
}

report::Rendered show_cluster(const config::ClusterSpec& c, const fs::path& file) {
  report::Rendered r;
  r.doc = core::read_json_file(file.string());
  std::string& t = r.text;
  t += "cluster " + c.name + " (" + file.string() + ")\n";
  t += "  " + std::to_string(c.nodes) + " node(s) x " + std::to_string(c.gpus_per_node) + " " + c.gpu.name + " = " +
       std::to_string(c.world_size()) + " GPUs\n";
  t += "  GPU " + gpu_line(c.gpu) + "\n";
  t += "  intra-node: " + config::to_string(c.fabric) + ", " + std::to_string(c.links_per_gpu) + " x " +
       link_line(c.intra_link) + " per GPU" + (c.p2p ? "" : "; no GPU peer-to-peer") + "\n";
  if (c.inter_link)
    t += "  inter-node: " + std::to_string(c.nics_per_node) + " x " + link_line(*c.inter_link) + " per node; fabric " +
         fabric::to_string(c.inter_fabric.topology) + (c.sharp ? "; SHARP" : "") + "\n";
  else
    t += "  inter-node: none (one node only)\n";
  if (c.nccl_version) t += "  NCCL " + std::to_string(c.nccl_version) + "\n";
  char b[96];
  if (c.price_per_gpu_hour > 0) {
    std::snprintf(b, sizeof b, "  price: $%.2f per GPU-hour\n", c.price_per_gpu_hour);
    t += b;
  }
  return r;
}

}  // namespace

int cmd_show(const CommonOptions& common, const std::string& name, const std::string& json_out) {
  check_outputs({json_out});
  auto cat = common.catalog();
  // A file is read as a model (the only kind show took before); a bundled name as whichever kind has it.
  std::error_code ec;
  const bool is_file = fs::is_regular_file(name, ec);
  using config::Kind;
  auto bundled = [&](Kind k) { return !is_file && fs::is_regular_file(cat.dir(k) / (name + ".json"), ec); };
  if (is_file || bundled(Kind::MODEL)) {
    auto m = cat.load_model(cat.resolve(Kind::MODEL, name));
    return emit(report::model_layers_view(m), json_out, "show");
  }
  if (bundled(Kind::CLUSTER)) {
    const fs::path p = cat.resolve(Kind::CLUSTER, name);
    return emit(show_cluster(cat.load_cluster(p), p), json_out, "show");
  }
  if (bundled(Kind::GPU)) {
    const fs::path p = cat.resolve(Kind::GPU, name);
    report::Rendered r;
    r.doc = core::read_json_file(p.string());
    r.text = "GPU " + gpu_line(cat.load_gpu(p)) + "\n  (" + p.string() + ")\n";
    return emit(r, json_out, "show");
  }
  if (bundled(Kind::LINK)) {
    const fs::path p = cat.resolve(Kind::LINK, name);
    report::Rendered r;
    r.doc = core::read_json_file(p.string());
    r.text = "link " + link_line(cat.load_link(p)) + "\n  (" + p.string() + ")\n";
    return emit(r, json_out, "show");
  }
  std::vector<std::string> all;
  std::string lists;
  for (Kind k : {Kind::MODEL, Kind::CLUSTER, Kind::GPU, Kind::LINK}) {
    std::string list;
    for (const auto& n : cat.names(k)) {
      all.push_back(n);
      list += (list.empty() ? "" : ", ") + n;
    }
    lists += "; " + config::to_string(k) + "s: " + (list.empty() ? "none" : list);
  }
  throw core::ConfigError("show: \"" + name + "\" is neither a model file nor a bundled model, cluster, GPU or link" +
                          core::did_you_mean(name, all) + lists);
}

Command register_show(CLI::App& app, CommonOptions& common) {
  auto name = std::make_shared<std::string>();
  auto json_out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "show", "a model's layers (parameters, FLOPs, measured times), or a cluster's, GPU's or link's figures");
  cmd->add_option("name", *name, "bundled model, cluster, GPU or link name, or a model file")->required();
  cmd->add_option("--json", *json_out, "write the layers (or the file's JSON) to FILE or -");
  return {cmd, [&common, name, json_out] { return cmd_show(common, *name, *json_out); }};
}

}  // namespace ddpsim::app
