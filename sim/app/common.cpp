// What every subcommand shares: the catalog over --data-dir, the scenario to simulate (a file, a
// bundled name, a subfolder's "compare/NAME", or --model/--cluster flags), warnings for likely
// mistakes, and command-line number checks.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/commands.hpp"
#include "collectives/net_plugin.hpp"
#include "config/nccl_names.hpp"
#include "config/overrides.hpp"
#include "config/sections.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"
#include "core/units.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/kernel_model.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

config::Catalog CommonOptions::catalog() const {
  return config::Catalog(data_dir.empty() ? config::Catalog::default_root() : fs::path(data_dir));
}

void check_outputs(std::initializer_list<std::string> paths) {
  std::vector<std::string> given;
  for (const auto& p : paths)
    if (!p.empty()) given.push_back(p);
  report::check_output_paths(given);
}

int emit(const report::Rendered& r, const std::string& json_out, const std::string& what) {
  if (!json_out.empty()) report::write_output(json_out, report::json_text(r.doc, 2, what));
  if (json_out != "-") std::cout << r.text;
  return r.status;
}

std::vector<std::string> scenario_names(const config::Catalog& cat) {
  std::vector<std::string> out = cat.names(config::Kind::SCENARIO);
  std::error_code ec;
  std::vector<std::string> nested;
  // One level of subfolders (scenarios/compare/, scenarios/claims/): named "folder/stem".
  for (const auto& d : fs::directory_iterator(cat.dir(config::Kind::SCENARIO), ec)) {
    if (!d.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(d.path(), ec))
      if (e.is_regular_file() && e.path().extension() == ".json")
        nested.push_back(d.path().filename().string() + "/" + e.path().stem().string());
  }
  std::sort(nested.begin(), nested.end());
  out.insert(out.end(), nested.begin(), nested.end());
  return out;
}

fs::path scenario_path(const config::Catalog& cat, const std::string& s) {
  const std::string name = s.empty() ? "default" : s;
  std::error_code ec;
  fs::path p;
  // "compare/llama7b-16x8-h100-adamw": a bundled scenario in a subfolder, unless such a file
  // exists relative to the working directory (a path wins, as for every other name).
  const fs::path nested = cat.dir(config::Kind::SCENARIO) / (name + ".json");
  if (name.find('/') != std::string::npos && !fs::is_regular_file(name, ec) && fs::path(name).is_relative() &&
      name.find("..") == std::string::npos && fs::is_regular_file(nested, ec)) {
    p = nested;
  } else {
    try {
      p = cat.resolve(config::Kind::SCENARIO, name);
    } catch (const core::ConfigError&) {
      std::string list;
      const auto names = scenario_names(cat);
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw core::ConfigError("\"" + name + "\" is neither a bundled scenario nor a readable file" +
                              core::did_you_mean(name, names) + "; bundled scenarios (" +
                              cat.dir(config::Kind::SCENARIO).string() + ", `ddpsim list scenarios`): " + list);
    }
  }
  spdlog::debug("scenario \"{}\" is {} (data dir {})", name, p.string(), cat.root().string());
  return p;
}

CLI::Validator number_in(double lo, double hi, bool above) {
  auto fmt = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return std::string(b);
  };
  const std::string allowed = "a finite number " + (above ? "> " + fmt(lo) : ">= " + fmt(lo)) + " and <= " + fmt(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) ||
            (above ? v <= lo : v < lo) || v > hi)
          return text + " is not allowed; expected " + allowed;
        return std::string();
      },
      allowed);
}

void add_set_option(CLI::App& cmd, CommonOptions& common, const std::string& help) {
  cmd.add_option("--set", common.overrides, help);
}

std::string scenario_title(const std::string& title, const std::vector<std::string>& overrides) {
  if (overrides.empty()) return title;
  std::string s = title + ", with";
  for (const auto& o : overrides) s += " --set " + o;
  return s;
}

ScenarioSource scenario_source(const config::Catalog& cat, const ScenarioFlags& f,
                               std::vector<std::string>* extra_overrides) {
  ScenarioSource src;
  if (f.model.empty()) {
    if (!f.cluster.empty())
      throw core::ConfigError("--cluster " + f.cluster +
                              " needs --model: give a scenario, or --model M --cluster C (without a scenario)");
    src.file = scenario_path(cat, f.scenario);
    src.title = f.scenario.empty() ? "default" : f.scenario;
    // --nodes / --gpus-per-node on a scenario: overrides like --set nodes=N, echoed in the header.
    std::vector<std::string> ov;
    if (f.nodes > 0) ov.push_back("nodes=" + std::to_string(f.nodes));
    if (f.gpus_per_node > 0) ov.push_back("gpus_per_node=" + std::to_string(f.gpus_per_node));
    if (!ov.empty()) {
      if (!extra_overrides)
        throw core::ConfigError("--nodes and --gpus-per-node go with --model M --cluster C; use --set nodes=N");
      extra_overrides->insert(extra_overrides->begin(), ov.begin(), ov.end());
    }
    return src;
  }
  if (!f.scenario.empty())
    throw core::ConfigError("scenario \"" + f.scenario + "\" and --model " + f.model +
                            ": give one (to change a scenario's model: --set model=" + f.model + ")");
  if (f.cluster.empty()) throw core::ConfigError("--model " + f.model + " needs --cluster C (`ddpsim list clusters`)");
  // Resolved now so that a misspelt name is refused (with suggestions) before anything runs.
  cat.resolve(config::Kind::MODEL, f.model);
  cat.resolve(config::Kind::CLUSTER, f.cluster);
  src.title = "model " + f.model + " on cluster " + f.cluster;
  src.doc = Json::object();
  src.doc["name"] = src.title;
  src.doc["model"] = f.model;
  src.doc["cluster"] = f.cluster;
  if (f.nodes > 0) src.doc["nodes"] = f.nodes;
  if (f.gpus_per_node > 0) src.doc["gpus_per_node"] = f.gpus_per_node;
  return src;
}

config::Scenario ScenarioSource::load(const config::Catalog& cat, const std::vector<std::string>& overrides) const {
  config::Scenario s;
  if (!file.empty()) {
    s = cat.load_scenario(file, overrides);
  } else {
    Json j = doc;
    config::apply_overrides(j, overrides);
    std::string label = title;
    if (!overrides.empty()) label = scenario_title(title, overrides);
    // Relative model and cluster files are read from the working directory.
    s = cat.scenario_from_json(j, label, fs::current_path());
    s.file = label;
    s.name = title;
  }
  return s;
}

std::vector<std::string> scenario_warnings(const config::Scenario& s) {
  std::vector<std::string> w;
  char b[512];
  // bucket_cap_mb is in MiB (torch/nn/parallel/distributed.py: bucket_bytes_cap = int(bucket_cap_mb
  // * 1024 * 1024)); a cap above all the gradients makes one bucket, and 26214400 is 25 MiB in bytes.
  const double grads = s.model.grad_bytes();
  // Only a cap the user set: at the default, PyTorch's 1 MiB first bucket still splits a small model.
  if (grads > 0 && s.training.wrapper == config::Wrapper::DDP && !s.ddp.bucket_cap_is_default &&
      s.ddp.bucket_cap_bytes() > grads) {
    std::snprintf(
        b, sizeof b,
        "ddp.bucket_cap_mb %.15g MiB is larger than all of model %s's gradients (%s): DDP puts them in one "
        "bucket and nothing overlaps with the backward pass%s",
        s.ddp.bucket_cap_mb, s.model.name.c_str(), core::format_bytes(grads).c_str(),
        s.ddp.bucket_cap_mb >= 1048576 ? "; bucket_cap_mb is in MiB, not bytes (25 MiB is 25, not 26214400)" : "");
    w.push_back(b);
  }
  // A learned position table (GPT-2's wpe, BERT's position_embeddings) has one row per position;
  // PyTorch fails with an index error on longer sequences.
  if (s.training.seq_len) {
    for (const auto& p : s.model.params) {
      const auto ends = [&](const std::string& suffix) {
        return p.name.size() >= suffix.size() &&
               p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if ((ends("wpe.weight") || ends("position_embeddings.weight")) && p.shape.size() == 2 &&
          *s.training.seq_len > p.shape[0]) {
        std::snprintf(b, sizeof b,
                      "training.seq_len %d is beyond model %s's %lld positions (%s has %lld rows): the real model "
                      "cannot take such sequences",
                      *s.training.seq_len, s.model.name.c_str(), static_cast<long long>(p.shape[0]), p.name.c_str(),
                      static_cast<long long>(p.shape[0]));
        w.push_back(b);
        break;
      }
    }
  }
  // Several collectives of one stream at once is a CPU process group's thread pool (gloo); NCCL
  // runs a communicator's kernels on one CUDA stream, in order.
  if (s.streams.comm_workers > 1 && s.collective.model == config::CollectiveModelKind::NCCL)
    w.push_back("streams.comm_workers " + std::to_string(s.streams.comm_workers) +
                " runs that many collectives of one NCCL stream at once, but NCCL runs a communicator's "
                "collectives in order on one CUDA stream (comm_workers 1); several workers are gloo's threads "
                "(collective.model \"ring\"). For concurrent NCCL collectives use streams.comm_streams");
  // training.memory_format where it cannot do what it says. Measured times are used in the layout
  // they were taken in (gpu/compute_model), so a scenario asking for the other one is told.
  const bool conv = s.model.has_layer_type(config::LayerType::CONV2D);
  const bool measured = s.compute.use_measured && s.model.has_measured_times();
  const std::string& fmt = s.training.memory_format;
  if (fmt == "channels_last" && !conv) {
    w.push_back("training.memory_format \"channels_last\" has no effect on model " + s.model.name +
                ": it has no convolutions (channels_last is a layout of 4-d image tensors)");
  } else if (conv && measured) {
    if (s.model.measured_memory_format != fmt)
      w.push_back("model " + s.model.name + "'s layer times were measured in " + s.model.measured_memory_format +
                  " and are used as measured; training.memory_format \"" + fmt + "\" changes only estimated compute");
  } else if (fmt == "channels_last") {
    const std::string math = gpu::conv_math_mode(s.cluster.gpu, s.training.compute_dtype);
    if (!s.model.has_kernels())
      w.push_back("training.memory_format \"channels_last\" changes only the per-kernel estimate; model " +
                  s.model.name + " has no kernel records (its compute is the roofline per layer)");
    else if (!gpu::device_rates(s.cluster.gpu, math, 0).tensor_cores)
      w.push_back("training.memory_format \"channels_last\" with " + math + " convolutions on " + s.cluster.gpu.name +
                  " (no tensor cores for them): ddpsim models no layout effect there, and PyTorch's maintainers "
                  "expect channels_last to help only tensor-core inputs (pytorch/pytorch#44943)");
  }
  // training.loss with measured layer times: they are timed per module, and the loss is none, so
  // a vocabulary-sized loss (more than 4,096 classes: milliseconds per step) is in neither.
  if (measured && s.training.loss != "none") {
    const auto l = gpu::loss_kernels(s.model, gpu::KernelContext{}, s.training.loss);
    if (l.rows > 0 && l.classes > 4096) {
      char b[64];
      std::snprintf(b, sizeof b, "%.0f", l.classes);
      w.push_back("model " + s.model.name +
                  "'s layer times are measured per module, which leaves out the loss on its " + b +
                  "-class output; training.loss \"" + s.training.loss +
                  "\" adds it to estimated compute only (measure the whole step instead: "
                  "training.measured_single_gpu_step; or set training.loss \"none\")");
    }
  }
  // An export from before the per-layer host_ops: the per-kernel model then charges host time per
  // kernel only (views, autograd view nodes and module calls left out). Every export has at least
  // one module call, so all-zero counts mean none were written.
  if (s.model.has_kernels() && !measured && !s.training.cuda_graphs) {
    const auto& ls = s.model.layers;
    if (std::none_of(ls.begin(), ls.end(), [](const auto& l) { return l.host_views + l.host_module_calls > 0; }))
      w.push_back("model " + s.model.name +
                  " has kernel records but no host_ops (an export from before 2026-12-04): eager host work "
                  "without a kernel (views, autograd view nodes, module calls) is left out of its host dispatch; "
                  "add it with scripts/export_model.py --add-kernels FILE -o FILE");
  }
  // aws-ofi-nccl learnt p6-b200 in 1.16.0: an older release named for it leaves all of the plugin out.
  if (collectives::parse_net_plugin(s.cluster.net_plugin) == collectives::NetPlugin::AWS_OFI_P6 &&
      s.cluster.net_plugin_version != 0 && s.cluster.net_plugin_version < collectives::kAwsOfiP6)
    w.push_back("inter_node.net_plugin_version " + config::nccl_version_string(s.cluster.net_plugin_version) +
                " predates aws-ofi-nccl's p6-b200 support (1.16.0): nothing of the plugin is modelled (no "
                "region tuner, reported latency or EFA step; NCCL's own pick and latencies)");
  for (auto& f : config::fsdp_warnings(s)) w.push_back(std::move(f));
  return w;
}

std::vector<std::string> overrides_with_nccl(const CommonOptions& common) {
  std::vector<std::string> ov = common.nccl.as_overrides();
  ov.insert(ov.end(), common.overrides.begin(), common.overrides.end());
  return ov;
}

void print_warnings(const config::Scenario& s) {
  for (const auto& w : scenario_warnings(s)) std::cerr << "ddpsim: warning: " << w << "\n";
}

void warn_if_nothing_written(const std::string& command, bool quiet, const std::vector<std::string>& outputs) {
  if (!quiet || std::any_of(outputs.begin(), outputs.end(), [](const std::string& o) { return !o.empty(); })) return;
  spdlog::warn("{} --quiet without an output file (--json, --csv, ...): nothing is written", command);
}

}  // namespace ddpsim::app
