#include <cstdio>

#include "commands.hpp"
#include "stats.hpp"

namespace ddpbench {

Model load_model_arg(const ModelArgs& m) {
  if (!m.synthetic.empty()) {
    const auto j = synthetic_model(m.synthetic, m.batch > 0 ? m.batch : 64);
    return model_from_json(j, "--synthetic " + m.synthetic);
  }
  return load_model(m.model_path);
}

PlanOptions plan_options(const ModelArgs& m) {
  PlanOptions o;
  o.batch = m.batch;
  o.dtype = m.dtype;
  o.seq_len = m.seq_len;
  o.head_dim = m.head_dim;
#ifdef DDPBENCH_HAVE_CUDNN
  o.use_cudnn = m.conv != "gemm";
#else
  if (m.conv == "cudnn")
    throw ArgError("--conv: 'cudnn' is not available (ddpbench was built without cuDNN); allowed: auto, gemm");
  o.use_cudnn = false;
#endif
  return o;
}

LayerTimes time_layers(LayerRunner& runner, cudaStream_t s, const TimingArgs& t) {
  LayerTimes out;
  for (size_t i = 0; i < runner.plans().size(); ++i) {
    const auto& p = runner.plans()[i];
    out.fwd_s.push_back(p.fwd.empty() ? 0.0
                                      : median(time_iterations(s, t.warmup, t.iters, [&] { runner.forward(i, s); })));
    out.bwd_s.push_back(p.bwd.empty() ? 0.0
                                      : median(time_iterations(s, t.warmup, t.iters, [&] { runner.backward(i, s); })));
  }
  return out;
}

nlohmann::json plans_json(const std::vector<LayerPlan>& plans, const LayerTimes* times) {
  nlohmann::json arr = nlohmann::json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto& p = plans[i];
    nlohmann::json fwd = nlohmann::json::array(), bwd = nlohmann::json::array();
    for (const auto& op : p.fwd) fwd.push_back(op.describe());
    for (const auto& op : p.bwd) bwd.push_back(op.describe());
    nlohmann::json j = {{"name", p.name},           {"type", p.type},           {"note", p.note},
                        {"fwd_ops", fwd},           {"bwd_ops", bwd},           {"fwd_flops", p.fwd_flops},
                        {"bwd_flops", p.bwd_flops}, {"fwd_bytes", p.fwd_bytes}, {"bwd_bytes", p.bwd_bytes}};
    if (times) {
      const double tf = times->fwd_s[i], tb = times->bwd_s[i];
      j["fwd_time_s"] = tf;
      j["bwd_time_s"] = tb;
      j["fwd_tflops"] = tf > 0 ? p.fwd_flops / tf / 1e12 : 0.0;
      j["bwd_tflops"] = tb > 0 ? p.bwd_flops / tb / 1e12 : 0.0;
      j["fwd_GBps"] = tf > 0 ? p.fwd_bytes / tf / 1e9 : 0.0;
      j["bwd_GBps"] = tb > 0 ? p.bwd_bytes / tb / 1e9 : 0.0;
    }
    arr.push_back(j);
  }
  return arr;
}

void write_results(const ResultsWriter& w, const std::string& path) {
  if (path.empty()) return;
  w.write(path);
  std::printf("# results written to %s\n", path.c_str());
}

void cmd_layers(const LayersArgs& a, const Command& cmd) {
  const Model model = load_model_arg(a.model);
  const PlanOptions opts = plan_options(a.model);
  const int64_t batch = opts.batch > 0 ? opts.batch : int64_t{model.spec.batch_size};
  if (a.device >= device_count()) throw ArgError("-d: device " + std::to_string(a.device) + " is not visible");
  CUDACHECK(cudaSetDevice(a.device));
  const HardwareInfo hw = query_hardware(1, a.device);

  GpuContext ctx;
  ctx.init(0, 1, a.device, nullptr);
  LayerTimes times;
  std::vector<LayerPlan> plans;
  {
    LayerRunner runner(ctx, plan_model(model, opts), a.model.dtype, a.model.tf32);
    times = time_layers(runner, ctx.compute, a.timing);
    plans = runner.plans();
  }
  std::printf("# ddpbench layers: %s on %s, batch %ld, %s, median of %d iterations\n", model.spec.name.c_str(),
              hw.gpu_name.c_str(), static_cast<long>(batch), dtype_name(a.model.dtype), a.timing.iters);
  std::printf("# %-4s %-40s %-12s %12s %12s %10s %10s\n", "idx", "layer", "type", "fwd (us)", "bwd (us)", "fwd TF/s",
              "fwd GB/s");
  double tf = 0, tb = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const auto& p = plans[i];
    tf += times.fwd_s[i];
    tb += times.bwd_s[i];
    std::printf("  %-4zu %-40.40s %-12s %12.2f %12.2f %10.2f %10.1f\n", i, p.name.c_str(), p.type.c_str(),
                times.fwd_s[i] * 1e6, times.bwd_s[i] * 1e6,
                times.fwd_s[i] > 0 ? p.fwd_flops / times.fwd_s[i] / 1e12 : 0.0,
                times.fwd_s[i] > 0 ? p.fwd_bytes / times.fwd_s[i] / 1e9 : 0.0);
  }
  std::printf("# total forward %.3f ms, backward %.3f ms (sum of layers timed one at a time)\n", tf * 1e3, tb * 1e3);

  ResultsWriter w("layers", hw, config_json(cmd));
  w.set_layers(measured_profile(model, times.fwd_s, times.bwd_s, hw.gpu_name, batch, dtype_name(a.model.dtype)),
               plans_json(plans, &times));
  ctx.destroy();
  write_results(w, a.timing.json_path);
}

}  // namespace ddpbench
