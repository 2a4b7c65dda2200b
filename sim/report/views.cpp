#include "report/views.hpp"

#include <cstdio>
#include <sstream>

#include "core/units.hpp"

namespace ddpsim::report {

using core::Json;

namespace {

Json buckets_json(const std::vector<ddp::Bucket>& buckets, const config::ModelSpec& m) {
  Json arr = Json::array();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    arr.push_back({{"index", i},
                   {"bytes", static_cast<long long>(b.bytes)},
                   {"dtype", config::to_string(b.dtype)},
                   {"num_tensors", b.param_indices.size()},
                   {"param_indices", b.param_indices},
                   {"first_param", m.params[b.param_indices.front()].name},
                   {"last_param", m.params[b.param_indices.back()].name}});
  }
  return arr;
}

void bucket_table(std::ostream& o, const char* title, const std::vector<ddp::Bucket>& bs,
                  const config::ModelSpec& model) {
  o << title << " (" << bs.size() << " buckets)\n  idx        size  tensors  first .. last parameter\n";
  for (size_t i = 0; i < bs.size(); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %3zu %11s %8zu  ", i, core::format_bytes(bs[i].bytes).c_str(),
                  bs[i].param_indices.size());
    o << buf << model.params[bs[i].param_indices.front()].name << " .. "
      << model.params[bs[i].param_indices.back()].name << "\n";
  }
}

}  // namespace

Rendered bucket_plans_view(const config::ModelSpec& model, const config::DdpSettings& ddp,
                           const ddp::BucketPlans& plans) {
  Rendered r;
  r.doc = {{"model", model.name},
           {"bucket_cap_mb", ddp.bucket_cap_mb},
           {"first_bucket_cap_bytes", static_cast<long long>(ddp.first_bucket_cap_bytes())},
           {"pytorch_version", ddp.pytorch_version},
           {"rebuilt", plans.rebuilt},
           {"rebuild_iteration", plans.rebuild_iteration},
           {"iteration1", buckets_json(plans.iteration1, model)},
           {"steady_state", buckets_json(plans.steady_state, model)}};
  std::ostringstream o;
  o << "model " << model.name << ": " << model.params.size() << " parameters, "
    << core::format_bytes(model.grad_bytes()) << " of gradients; bucket_cap_mb " << ddp.bucket_cap_mb
    << ", first bucket cap " << core::format_bytes(ddp.first_bucket_cap_bytes()) << "\n";
  bucket_table(o, "iteration 1", plans.iteration1, model);
  bucket_table(o, plans.rebuilt ? "steady state (rebuilt from the gradient-ready order)" : "steady state (no rebuild)",
               plans.steady_state, model);
  r.text = o.str();
  return r;
}

Rendered model_layers_view(const config::ModelSpec& m) {
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
    if (!l.param_ready.empty()) lj["bwd_param_ready"] = l.param_ready;
    layers.push_back(lj);
  }
  char tot[200];
  std::snprintf(tot, sizeof tot, "  total%49s %11.3f %10.2f %10.2f   (GFLOP/sample: %.3f forward, %.3f backward)\n", "",
                tp / 1048576.0, tf / 1e6, tb / 1e6, tf / 1e9, tb / 1e9);
  o << tot;
  Rendered r;
  r.doc = {{"model", m.name},
           {"params", m.params.size()},
           {"numel", m.total_numel()},
           {"batch_size", m.batch_size},
           {"fwd_flops_per_sample", tf},
           {"bwd_flops_per_sample", tb},
           {"layers", layers}};
  r.text = o.str();
  return r;
}

std::string catalog_entry_summary(const config::Catalog& cat, config::Kind kind, const std::filesystem::path& path) {
  try {
    switch (kind) {
      case config::Kind::MODEL: {
        auto m = cat.load_model(path);
        double numel = static_cast<double>(m.total_numel());
        char b[160];
        double flops = 0;
        for (const auto& l : m.layers) flops += l.fwd_flops;
        std::snprintf(b, sizeof b, "%.1fM parameters in %zu tensors, %s, %zu layers, %.2f GFLOP/sample forward%s",
                      numel / 1e6, m.params.size(), core::format_bytes(m.grad_bytes()).c_str(), m.layers.size(),
                      flops / m.batch_size / 1e9, m.measured_on.empty() ? "" : ", measured");
        std::string detail = b;
        // The size the layers were exported at (training.seq_len / image_size rescale it).
        if (m.kernel_export_size > 0)
          detail += (m.kernel_size_kind == "seq" ? ", exported at seq " : ", exported at image ") +
                    std::to_string(m.kernel_export_size);
        return detail;
      }
      case config::Kind::GPU: {
        auto g = cat.load_gpu(path);
        return config::to_string(g.arch) + ", " + std::to_string(g.sm_count) + " SMs, HBM " +
               core::format_bandwidth(g.hbm_bandwidth);
      }
      case config::Kind::LINK: {
        auto l = cat.load_link(path);
        return config::to_string(l.kind) + ", " + core::format_bandwidth(l.bandwidth) + ", " +
               core::format_time(l.latency) + " per step";
      }
      case config::Kind::CLUSTER: {
        auto c = cat.load_cluster(path);
        return std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) + " " + c.gpu.name + ", " +
               config::to_string(c.fabric) + " " + c.intra_link.name +
               (c.inter_link ? ", " + std::to_string(c.nics_per_node) + " x " + c.inter_link->name : "");
      }
      case config::Kind::SCENARIO: {
        auto j = core::read_json_file(path.string());
        return j.value("description", "");
      }
    }
  } catch (const std::exception& ex) {
    return std::string("INVALID: ") + ex.what();
  }
  return "";
}

}  // namespace ddpsim::report
