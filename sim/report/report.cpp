#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/text.hpp"
#include "core/units.hpp"
#include "report/prediction.hpp"
#include "report/tables.hpp"

namespace ddpsim::report {

using core::Json;

Json iteration_json(const IterationReport& it, bool include_buckets) {
  Json j;
  j["iteration"] = it.iteration;
  j["step_time_s"] = it.step_time_s;
  j["forward_s"] = it.forward_s;
  j["backward_compute_s"] = it.backward_compute_s;
  j["ddp_copy_s"] = it.ddp_copy_s;
  j["finalize_wait_s"] = it.finalize_wait_s;
  j["optimizer_s"] = it.optimizer_s;
  j["compute_only_s"] = it.compute_only_s;
  j["comm_alone_s"] = it.comm_alone_s;
  j["comm_busy_s"] = it.comm_busy_s;
  j["exposed_comm_s"] = it.exposed_comm_s;
  j["overlap_ratio"] = it.overlap_ratio ? Json(*it.overlap_ratio) : Json(nullptr);
  j["num_buckets"] = it.buckets.size();
  j["contention_s"] = it.contention_s;
  j["straggler_wait_s"] = it.straggler_wait_s;
  j["comm_exposed_s"] = it.comm_exposed_s;
  j["comm_hidden_s"] = it.comm_hidden_s;
  j["data_wait_s"] = it.data_wait_s;
  j["h2d_s"] = it.h2d_s;
  j["autograd_traversal_s"] = it.autograd_traversal_s;
  j["ddp_overhead_s"] = it.ddp_overhead_s;
  j["ddp_overhead"] = {{"copies_s", it.ddp_copy_s},
                       {"hook_kernels_s", it.ddp_hook_kernel_s},
                       {"buffer_copies_s", it.ddp_buffer_copy_s},
                       {"forward_host_s", it.ddp_forward_host_s},
                       {"hook_host_s", it.ddp_hook_host_s},
                       {"bucket_host_s", it.ddp_bucket_host_s}};
  j["micro_steps"] = it.micro_steps;
  j["micro_step_time_s"] = it.micro_step_time_s;
  j["comm_alone_per_sample_s"] = it.comm_alone_per_sample_s;
  j["samples_per_rank"] = it.samples;
  j["steps_simulated"] = it.steps_simulated;
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  j["step_time_p50_s"] = opt(it.step_time_p50_s);
  j["step_time_p95_s"] = opt(it.step_time_p95_s);
  j["step_time_p99_s"] = opt(it.step_time_p99_s);
  j["zero_broadcast_s"] = it.zero_broadcast_s;
  j["zero_broadcasts"] = it.zero_broadcasts;
  j["zero_broadcast_bytes"] = it.zero_broadcast_bytes;
  j["zero_broadcast_wait_s"] = it.zero_broadcast_wait_s;
  if (!it.units.empty()) {
    j["allgather_wait_s"] = it.allgather_wait_s;
    j["reduce_wait_s"] = it.reduce_wait_s;
  }
  if (include_buckets && !it.units.empty()) {
    Json rows = Json::array();
    for (const auto& u : it.units)
      rows.push_back({{"index", u.index},
                      {"name", u.name},
                      {"allgather_bytes", u.allgather_bytes},
                      {"allgathers", u.allgathers},
                      {"allgather_alone_s", u.allgather_alone_s},
                      {"allgather_exposed_s", u.allgather_exposed_s},
                      {"reduce_bytes", u.reduce_bytes},
                      {"reduce_alone_s", u.reduce_alone_s},
                      {"reduce_exposed_s", u.reduce_exposed_s}});
    j["fsdp_units"] = rows;
  }
  if (include_buckets) {
    Json rows = Json::array();
    for (const auto& b : it.buckets) {
      rows.push_back({{"index", b.index},
                      {"bytes", b.bytes},
                      {"num_tensors", b.num_tensors},
                      {"ready_s", b.ready_s},
                      {"launch_s", b.launch_s},
                      {"start_s", b.start_s},
                      {"reduce_scatter_end_s", b.rs_end_s},
                      {"end_s", b.end_s},
                      {"alone_s", b.alone_s},
                      {"exposed_s", b.exposed_s},
                      {"algorithm", b.algorithm},
                      {"protocol", b.protocol},
                      {"channels", b.channels},
                      {"nccl_estimate_s", b.nccl_estimate_s},
                      {"vs_nccl_estimate", b.vs_nccl}});
    }
    j["buckets"] = rows;
  }
  return j;
}

Json to_json(const StepReport& r, bool include_buckets) {
  Json j = iteration_json(r.steady, include_buckets);
  j["scenario"] = r.scenario;
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["gpu"] = r.gpu;
  j["world_size"] = r.world_size;
  j["nodes"] = r.nodes;
  j["gpus_per_node"] = r.gpus_per_node;
  if (!r.nccl_trust.empty()) j["nccl_trust"] = r.nccl_trust;
  if (!r.placement_text.empty())
    j["placement"] = {{"assumed", r.placement}, {"guaranteed", r.placement_guaranteed}, {"text", r.placement_text}};
  j["batch_size"] = r.batch_size;
  j["backend"] = r.backend;
  j["fidelity"] = r.fidelity;
  j["bucket_cap_mb"] = r.bucket_cap_mb;
  j["grad_bytes"] = r.grad_bytes;
  j["num_params"] = r.num_params;
  j["buckets_rebuilt"] = r.rebuilt;
  j["samples_per_s"] =
      r.steady.step_time_s > 0 ? static_cast<double>(r.steady.samples) * r.world_size / r.steady.step_time_s : 0.0;
  j["comm_hook"] = r.comm_hook;
  j["explicit_ranks"] = r.explicit_ranks;
  j["ranks"] = r.ranks;
  j["flows"] = r.flows;
  j["flows_reused"] = r.flows_reused;
  j["contention"] = r.contention;
  j["compute_scale"] = r.compute_scale;
  j["measured_layers"] = r.measured_layers;
  // [compute]
  j["compute_scale_per"] = r.compute_scale_per;
  j["compute_provenance"] = r.compute_provenance;
  j["compute_host"] = r.compute_host_forward_s + r.compute_host_backward_s > 0
                          ? Json{{"forward_s", r.compute_host_forward_s},
                                 {"backward_s", r.compute_host_backward_s},
                                 {"gpu_wait_s", r.compute_host_wait_s},
                                 {"no_kernel_s", r.compute_host_no_kernel_s},
                                 {"kernels_forward", r.compute_host_kernels_forward},
                                 {"kernels_backward", r.compute_host_kernels_backward}}
                          : Json(nullptr);
  j["optimizer_host"] = r.optimizer_host ? Json{{"host_s", r.optimizer_host_s},
                                                {"gpu_wait_s", r.optimizer_host_wait_s},
                                                {"grad_scaler_sync", r.optimizer_sync},
                                                {"impl", r.optimizer_impl}}
                                         : Json(nullptr);
  // The likely band of the real step and what it rests on (report/prediction.hpp).
  if (r.steady.step_time_s > 0) j["prediction"] = prediction_json(prediction(r));
  j["mfu"] = r.mfu();
  j["mfu_peak_dtype"] = r.mfu_peak_dtype;
  j["model_flops_per_micro_step"] = r.model_flops_per_micro_step;
  j["seq_len"] = r.seq_len > 0 ? Json(r.seq_len) : Json(nullptr);
  j["image_size"] = r.image_size > 0 ? Json(r.image_size) : Json(nullptr);
  j["attention"] = r.attention;
  j["memory_format"] = r.memory_format;
  j["conv_transposes_s"] = r.conv_transposes_s > 0 ? Json(r.conv_transposes_s) : Json(nullptr);
  j["per_element_kernels"] = r.per_element_s > 0
                                 ? Json{{"seconds", r.per_element_s}, {"over_streaming_s", r.per_element_over_bytes_s}}
                                 : Json(nullptr);
  j["loss"] = r.loss;
  j["loss_compute"] =
      r.loss_rows > 0
          ? Json{{"kind", "cross_entropy"}, {"rows", r.loss_rows}, {"classes", r.loss_classes}, {"seconds", r.loss_s}}
          : Json(nullptr);
  j["links"] = links_json(r);
  j["busiest_link"] = busiest_link_json(r);
  if (!r.links_note.empty()) j["links_note"] = r.links_note;
  if (!r.transfer_from.empty()) {
    Json t = Json::object();
    t["from"] = r.transfer_from;
    t["from_device"] = r.transfer_from_device;
    t["to"] = r.transfer_to;
    Json cls = Json::object();
    for (const auto& c : r.transfer_classes)
      cls[c.name] = {{"measured_s", c.measured_s}, {"transferred_s", c.transferred_s}, {"factor", c.factor}};
    t["classes"] = cls;
    j["compute_transfer"] = t;
  }
  j["iteration1"] = r.has_iteration1 ? iteration_json(r.iteration1, include_buckets) : Json(nullptr);
  // Memory per GPU at its peak (memory/memory_model.hpp); `ddpsim compare` reads these names.
  const auto& m = r.memory;
  j["memory_per_gpu_bytes"] = m.total();
  j["gpu_memory_bytes"] = m.gpu_memory;
  j["fits"] = m.fits();
  j["memory"] = {{"parameters", m.parameters},
                 {"buffers", m.buffers},
                 {"gradients", m.gradients},
                 {"buckets", m.buckets},
                 {"optimizer_state", m.optimizer_state},
                 {"optimizer_temporaries", m.optimizer_temporaries},
                 {"activations", m.activations},
                 {"allowance", m.allowance()},
                 {"cuda_context", m.cuda_context},
                 {"nccl_buffers", m.nccl_buffers},
                 {"peak_phase", m.peak_phase},
                 {"activation_rule", m.activation_rule},
                 {"activations_saved", m.activations_saved},
                 {"optimizer_state_unsharded", m.optimizer_state_unsharded},
                 {"zero_shards", m.zero_shards},
                 {"unsharded_params", m.unsharded_params},
                 {"unsharded_grads", m.unsharded_grads},
                 {"fsdp_shards", m.fsdp_shards},
                 {"unsharded_units", m.unsharded_units}};
  if (r.fit) {
    const auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
    j["fit_options"] = {{"largest_batch", r.fit->largest_batch},
                        {"largest_batch_bytes", r.fit->largest_batch_bytes},
                        {"activation_checkpointing_full_bytes", opt(r.fit->checkpointed_bytes)},
                        {"fsdp_bytes", opt(r.fit->fsdp_bytes)},
                        {"fsdp_checkpointed_bytes", opt(r.fit->fsdp_checkpointed_bytes)},
                        {"text", fit_options_text(r)}};
  } else {
    j["fit_options"] = nullptr;
  }
  if (!r.fsdp.empty()) j["fsdp"] = r.fsdp;
  if (r.fsdp_offload) {
    const auto& o = *r.fsdp_offload;
    j["fsdp_offload"] = {{"h2d_bytes", o.h2d_bytes},    {"h2d_copies", o.h2d_copies}, {"h2d_s", o.h2d_s},
                         {"d2h_bytes", o.d2h_bytes},    {"d2h_s", o.d2h_s},           {"cpu_step_s", o.cpu_step_s},
                         {"cpu_step", o.cpu_step_what}, {"host_bytes", o.host_bytes}};
    j["memory"]["host_offload"] = r.memory.host_offload;
  }
  j["activation_checkpointing"] = r.activation_checkpointing;
  j["zero_redundancy_optimizer"] = r.zero_redundancy_optimizer;
  // Only when iteration 1 is faster than the steady state (metrics.hpp explain_iteration1).
  if (!r.iteration1_faster_because.empty()) j["iteration1_faster_because"] = r.iteration1_faster_because;
  if (r.data_parallel) {
    const auto& d = *r.data_parallel;
    j["wrapper"] = "data_parallel";
    Json gpus = Json::array();
    for (const auto& g : d.gpus)
      gpus.push_back({{"gpu", g.gpu},
                      {"tx_bytes", g.tx_bytes},
                      {"rx_bytes", g.rx_bytes},
                      {"host_link_bytes", g.host_link_bytes},
                      {"port_bandwidth", g.port_bandwidth},
                      {"bandwidth_use", g.bandwidth_use},
                      {"kernel_s", g.kernel_s},
                      {"transfer_s", g.transfer_s},
                      {"transfer_bandwidth_share", g.transfer_bandwidth_share}});
    j["data_parallel"] = {{"phases",
                           {{"scatter_s", d.scatter_s},
                            {"replicate_s", d.replicate_s},
                            {"forward_s", d.forward_s},
                            {"gather_s", d.gather_s},
                            {"backward_s", d.backward_s},
                            {"reduce_s", d.reduce_s},
                            {"optimizer_s", d.optimizer_s}}},
                          {"gil_wait_s", d.gil_wait_s},
                          {"host_python_s", d.host_python_s},
                          {"param_bytes", d.param_bytes},
                          {"buffer_bytes", d.buffer_bytes},
                          {"grad_bytes", d.grad_bytes},
                          {"input_bytes", d.input_bytes},
                          {"output_bytes", d.output_bytes},
                          {"broadcast_calls", d.broadcast_calls},
                          {"reduce_calls", d.reduce_calls},
                          {"nccl", d.nccl},
                          {"gil_share", d.gil_share},
                          {"gpus", gpus}};
  }
  return j;
}

std::string fit_options_text(const StepReport& r) {
  if (!r.fit) return "";
  const auto& f = *r.fit;
  std::vector<std::string> yes, no;
  const auto add = [&](double bytes, const std::string& what) {
    (bytes <= r.memory.gpu_memory ? yes : no).push_back(what + " (" + core::format_bytes(bytes) + ")");
  };
  if (f.largest_batch > 0)
    yes.push_back("training.batch_size <= " + std::to_string(f.largest_batch) + " (" +
                  core::format_bytes(f.largest_batch_bytes) + " at " + std::to_string(f.largest_batch) + ")");
  else
    no.push_back("training.batch_size 1 (" + core::format_bytes(f.largest_batch_bytes) + ")");
  if (f.checkpointed_bytes) add(*f.checkpointed_bytes, "activation_checkpointing full");
  if (f.fsdp_bytes) add(*f.fsdp_bytes, "training.wrapper fsdp");
  if (f.fsdp_checkpointed_bytes)
    add(*f.fsdp_checkpointed_bytes, "training.wrapper fsdp + activation_checkpointing full");
  if (yes.empty()) return "none of " + core::join(no, ", ") + " fits";
  return "would fit with " + core::join(yes, ", ") + (no.empty() ? "" : "; not with " + core::join(no, ", "));
}

std::string memory_warning(const StepReport& r) {
  const auto& m = r.memory;
  if (m.fits()) return "";
  const auto [name, bytes] = m.largest_term();
  const auto fit = fit_options_text(r);
  return "ddpsim: warning: " + r.scenario + ": needs " + core::format_bytes(m.total()) + " per GPU at its peak (" +
         m.peak_phase + "), more than the " + core::format_bytes(m.gpu_memory) + " of " + r.gpu +
         "; largest term: " + name + " " + core::format_bytes(bytes) + (fit.empty() ? "" : "; " + fit) +
         " (see \"memory\" in --json)";
}

Json summary_json(const StepReport& r) { return to_json(r, false); }

namespace {
// The counted steps' total time: the steady step times link_steps.
double link_window(const StepReport& r) { return r.steady.step_time_s * std::max(r.link_steps, 1); }
}  // namespace

Json links_json(const StepReport& r) {
  Json a = Json::array();
  if (r.link_steps <= 0) return a;
  const double steps = r.link_steps;
  const double win = link_window(r);
  for (const auto& c : r.link_classes) {
    Json j{{"class", c.cls},
           {"links", c.links},
           {"capacity_bytes_per_s", c.capacity},
           {"bytes", c.bytes / steps},
           {"bytes_per_link", c.links > 0 ? c.bytes / steps / static_cast<double>(c.links) : 0.0}};
    if (c.timed && win > 0) {
      j["busy_share"] = c.max_busy_s / win;
      j["mean_utilisation"] = c.capacity > 0 ? c.bytes / (c.capacity * win) : 0.0;
      j["busiest_link"] = {{"name", c.busiest},
                           {"bytes", c.busiest_bytes / steps},
                           {"utilisation", c.busiest_capacity > 0 ? c.busiest_bytes / (c.busiest_capacity * win) : 0.0},
                           {"busy_share", c.busiest_busy_s / win}};
    } else {
      j["busy_share"] = nullptr;
      j["mean_utilisation"] = nullptr;
      j["busiest_link"] = nullptr;
    }
    a.push_back(std::move(j));
  }
  return a;
}

Json busiest_link_json(const StepReport& r) {
  const Json classes = links_json(r);
  Json best = nullptr;
  double best_u = -1;
  for (const auto& c : classes) {
    if (c["busiest_link"].is_null()) continue;
    const double u = c["busiest_link"]["utilisation"].get<double>();
    if (u > best_u * (1 + 1e-9)) {  // the first of equals, in class order
      best_u = u;
      best = c["busiest_link"];
      best["class"] = c["class"];
    }
  }
  return best;
}

// [compute]
double StepReport::mfu() const {
  if (steady.step_time_s <= 0 || mfu_peak_flops <= 0) return 0;
  return model_flops_per_micro_step * steady.micro_steps / (steady.step_time_s * mfu_peak_flops);
}

namespace {
std::string pct(std::optional<double> v) {
  if (!v) return "n/a (no communication)";
  char buf[32];
  double percent = *v * 100.0;
  if (std::abs(percent) < 0.05) percent = 0.0;  // no "-0.0 %" from rounding noise
  std::snprintf(buf, sizeof buf, "%.1f %%", percent);
  return buf;
}
}  // namespace

std::string to_table(const StepReport& r) {
  std::ostringstream o;
  const auto& s = r.steady;
  o << "ddpsim: " << r.scenario << "\n";
  o << "  model " << r.model << " (" << r.num_params << " parameter tensors, " << core::format_bytes(r.grad_bytes)
    << " of gradients), batch " << r.batch_size << " per GPU";
  // [compute]
  if (r.seq_len > 0) o << " x seq " << r.seq_len << " (attention " << r.attention << ")";
  if (r.image_size > 0) o << " x " << r.image_size << "x" << r.image_size << " images";
  if (r.memory_format == "channels_last") o << ", channels_last";
  o << "\n";
  if (!r.compute_provenance.empty()) o << "  compute " << r.compute_provenance << "\n";
  if (r.compute_host_forward_s + r.compute_host_backward_s > 0)
    o << "    eager host dispatch " << core::format_time(r.compute_host_forward_s + r.compute_host_backward_s)
      << " per micro-step (forward " << core::format_time(r.compute_host_forward_s) << ", backward "
      << core::format_time(r.compute_host_backward_s)
      << (r.compute_host_no_kernel_s > 0 ? "; views and module calls " + core::format_time(r.compute_host_no_kernel_s)
                                         : std::string())
      << "); the GPU waits for it " << core::format_time(r.compute_host_wait_s) << "\n";
  if (r.conv_transposes_s > 0)
    o << "    NCHW<->NHWC transposes around cuDNN's convolutions " << core::format_time(r.conv_transposes_s)
      << " per micro-step (training.memory_format channels_last removes them)\n";
  // PyTorch's non-vectorized element-wise loops, where their cost beyond streaming is visible
  // (>= 1 % of forward + backward).
  if (r.per_element_over_bytes_s > 0 && r.per_element_over_bytes_s >= 0.01 * (s.forward_s + s.backward_compute_s))
    o << "    non-vectorized element-wise kernels (broadcast or strided operands, casts to float32) "
      << core::format_time(r.per_element_s) << " per micro-step, " << core::format_time(r.per_element_over_bytes_s)
      << " more than streaming their bytes\n";
  // The loss, where it is a visible share of the compute (>= 1 % of forward + backward).
  if (r.loss_rows > 0 && r.loss_s >= 0.01 * (s.forward_s + s.backward_compute_s)) {
    char b[200];
    std::snprintf(b, sizeof b, "    cross-entropy loss over %.0f x %.0f logits ", r.loss_rows, r.loss_classes);
    o << b << core::format_time(r.loss_s) << " per micro-step (training.loss none leaves it out)\n";
  }
  // The optimizer's host dispatch, where the GPU's wait for it is a visible share (>= 1 % of the step).
  if (r.optimizer_host && r.optimizer_host_wait_s >= 0.01 * s.step_time_s) {
    o << "    optimizer host dispatch " << core::format_time(r.optimizer_host_s) << " (" << r.optimizer_impl << "); "
      << (r.optimizer_sync ? "after GradScaler's found_inf .item() sync " : "") << "the GPU waits "
      << core::format_time(r.optimizer_host_wait_s) << "\n";
  }
  if (!r.transfer_classes.empty()) {
    o << "    scale factors per kernel class:";
    for (size_t i = 0; i < r.transfer_classes.size(); ++i) {
      const auto& c = r.transfer_classes[i];
      char b[160];
      std::snprintf(b, sizeof b, "%s %s x%.3f (%.2f -> %.2f ms)", i ? "," : "", c.name.c_str(), c.factor,
                    c.measured_s * 1e3, c.transferred_s * 1e3);
      o << b;
    }
    o << "\n";
  }
  o << "  cluster " << r.cluster << ": " << r.nodes << " node(s) x " << r.gpus_per_node << " " << r.gpu << " = "
    << r.world_size << " GPUs; backend " << r.backend << " (" << r.fidelity << ")\n";
  if (!r.nccl_trust_blocks.empty()) {
    // One clause a line: the closest validated table first, then what differs, the held-out
    // growth and where the step's calls fall; a block per collective when more than all-reduces.
    o << "  NCCL model trust:\n";
    for (const auto& b : r.nccl_trust_blocks)
      for (size_t i = 0; i < b.lines.size(); ++i) {
        if (b.collective.empty())
          o << "    " << b.lines[i] << "\n";
        else
          o << (i == 0 ? "    " + b.collective + ": " : "      ") << b.lines[i] << "\n";
      }
  }
  if (!r.placement_text.empty()) o << "  placement: " << r.placement_text << "\n";
  if (r.compute_scale != 1.0) {
    char b[128];
    std::snprintf(b, sizeof b, "  compute scaled x%.4f per %s to match the measured single-GPU step\n", r.compute_scale,
                  r.compute_scale_per.c_str());
    o << b;
  }
  if (r.data_parallel)
    o << "  torch.nn.DataParallel over " << r.world_size << " GPU(s): one process, GPU 0 the master\n\n";
  else if (!r.fsdp.empty()) {
    o << "  " << r.fsdp << "\n";
    if (const auto& f = r.fsdp_offload)
      o << "  CPU offload per step: shards to GPU " << core::format_bytes(f->h2d_bytes) << " in " << f->h2d_copies
        << " copies (" << core::format_time(f->h2d_s) << " alone), gradients to host "
        << core::format_bytes(f->d2h_bytes) << " (" << core::format_time(f->d2h_s) << "), optimizer on the CPU "
        << core::format_time(f->cpu_step_s) << " (" << f->cpu_step_what << "); host memory per GPU "
        << core::format_bytes(f->host_bytes) << "\n";
    o << "\n";
  } else if (r.world_size == 1)
    o << "  one GPU: DDP's hooks, bucket copies and one-rank calls, no communication\n\n";
  else
    o << "  DDP bucket_cap_mb " << r.bucket_cap_mb
      << (r.first_bucket_cap_bytes > 0 ? " (first bucket " + core::format_bytes(r.first_bucket_cap_bytes) + ")" : "")
      << ": " << s.buckets.size() << " buckets in the steady state"
      << (r.rebuilt ? " (rebuilt from the gradient-ready order)" : " (no rebuild)") << "\n\n";
  auto line = [&](const char* name, double v) { o << "  " << name << core::format_time(v) << "\n"; };
  o << "steady state (iteration " << r.steady_iteration << ")\n";
  line("step time            ", s.step_time_s);
  if (s.step_time_s > 0) o << "    " << prediction_text(prediction(r)) << "\n";
  line("  forward            ", s.forward_s);
  line("  backward compute   ", s.backward_compute_s);
  line("  finalize wait      ", s.finalize_wait_s);
  line("  optimizer          ", s.optimizer_s);
  line("compute only         ", s.compute_only_s);
  if (s.ddp_overhead_s > 0)
    o << "    DDP's own work     " << core::format_time(s.ddp_overhead_s) << " (copies "
      << core::format_time(s.ddp_copy_s) << ", hook kernels " << core::format_time(s.ddp_hook_kernel_s)
      << (s.ddp_buffer_copy_s > 0 ? ", buffer copies " + core::format_time(s.ddp_buffer_copy_s) : std::string())
      << ", hooks " << core::format_time(s.ddp_hook_host_s) << ", buckets " << core::format_time(s.ddp_bucket_host_s)
      << ", forward " << core::format_time(s.ddp_forward_host_s) << ")\n";
  line("comm alone           ", s.comm_alone_s);
  line("comm busy            ", s.comm_busy_s);
  line("exposed comm         ", s.exposed_comm_s);
  if (s.contention_s > 0) line("  compute slowed     ", s.contention_s);
  if (s.straggler_wait_s > 0) line("  straggler wait     ", s.straggler_wait_s);
  line("  comm waited on     ", s.comm_exposed_s);
  if (s.data_wait_s > 0) line("  data loader wait   ", s.data_wait_s);
  line("comm hidden          ", s.comm_hidden_s);
  o << "  overlap ratio      " << pct(s.overlap_ratio) << "\n";
  if (s.micro_steps > 1)
    o << "  " << s.micro_steps << " micro-steps per optimizer step, " << core::format_time(s.micro_step_time_s)
      << " each on average\n";
  if (s.step_time_p50_s)
    o << "  step time over " << s.steps_simulated << " steps: p50 " << core::format_time(*s.step_time_p50_s) << ", p95 "
      << core::format_time(*s.step_time_p95_s) << ", p99 " << core::format_time(*s.step_time_p99_s) << "\n";
  if (r.world_size > 1 && s.step_time_s > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(s.samples) * r.world_size / s.step_time_s);
    o << "  throughput         " << buf << " samples/s\n";
    // [compute]
    if (r.mfu_peak_flops > 0) {
      char m[96];
      std::snprintf(m, sizeof m, "  MFU                %.1f %% of the %s peak\n", 100 * r.mfu(),
                    r.mfu_peak_dtype.c_str());
      o << m;
    }
  }
  if (s.zero_broadcasts > 0)
    o << "  ZeRO broadcasts     " << core::format_time(s.zero_broadcast_s) << " alone (" << s.zero_broadcasts
      << " broadcasts, " << core::format_bytes(s.zero_broadcast_bytes) << "), waited on "
      << core::format_time(s.zero_broadcast_wait_s) << "\n";
  {
    const auto& m = r.memory;
    // DataParallel: GPU 0 holds the module's gradients, the optimizer state and the gathered output.
    o << (r.data_parallel ? "  memory on GPU 0    " : "  memory per GPU     ") << core::format_bytes(m.total());
    if (m.gpu_memory > 0)
      o << " of " << core::format_bytes(m.gpu_memory) << (m.fits() ? ": fits" : ": does NOT fit");
    else
      o << " (the GPU file gives no memory)";
    o << " (peak in " << m.peak_phase << ": parameters " << core::format_bytes(m.parameters + m.buffers)
      << ", gradients " << core::format_bytes(m.gradients) << ", buckets " << core::format_bytes(m.buckets)
      << ", optimizer " << core::format_bytes(m.optimizer_state + m.optimizer_temporaries)
      << (m.zero_shards > 1 ? " (ZeRO over " + std::to_string(m.zero_shards) + ")" : std::string())
      << (m.fsdp_shards > 1 ? " (sharded over " + std::to_string(m.fsdp_shards) + ")" : std::string())
      << (m.host_offload > 0 ? " (shards and optimizer on the host: " + core::format_bytes(m.host_offload) + ")"
                             : std::string())
      << (m.unsharded_params + m.unsharded_grads > 0
              ? ", unsharded units " + core::format_bytes(m.unsharded_params) + " (" +
                    std::to_string(m.unsharded_units) + ") + their gradient " + core::format_bytes(m.unsharded_grads)
              : std::string())
      << ", activations " << core::format_bytes(m.activations) << ", context + NCCL "
      << core::format_bytes(m.allowance()) << ")\n";
    if (const auto fit = fit_options_text(r); !fit.empty()) o << "    " << fit << "\n";
  }
  o << link_table(r);
  if (r.data_parallel) {
    const auto& d = *r.data_parallel;
    o << "\nDataParallel phases\n";
    line("  scatter            ", d.scatter_s);
    line("  replicate          ", d.replicate_s);
    line("  forward            ", d.forward_s);
    line("  gather             ", d.gather_s);
    line("  backward           ", d.backward_s);
    line("  reduce to GPU 0    ", d.reduce_s);
    line("  optimizer (GPU 0)  ", d.optimizer_s);
    line("  GIL waits (sum)    ", d.gil_wait_s);
    o << "  gpu     tx bytes     rx bytes  bandwidth use  while transferring\n";
    for (const auto& g : d.gpus) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "  %3d %12s %12s  %11.2f %%  %16.1f %%\n", g.gpu,
                    core::format_bytes(g.tx_bytes).c_str(), core::format_bytes(g.rx_bytes).c_str(),
                    100 * g.bandwidth_use, 100 * g.transfer_bandwidth_share);
      o << buf;
    }
  }
  if (r.has_iteration1) {
    // FSDP's iterations have units, not buckets (the same units in both).
    if (!r.iteration1.units.empty())
      o << "\niteration 1 (" << r.iteration1.units.size() << " FSDP unit(s))\n";
    else
      o << "\niteration 1 (" << r.iteration1.buckets.size() << " bucket(s))\n";
    o << "  step time          " << core::format_time(r.iteration1.step_time_s) << ", exposed comm "
      << core::format_time(r.iteration1.exposed_comm_s) << ", overlap " << pct(r.iteration1.overlap_ratio) << "\n";
    if (!r.iteration1_faster_because.empty()) o << "  " << r.iteration1_faster_because << "\n";
  }
  if (!s.units.empty()) {
    o << "\nsteady-state FSDP units (all-gathers: forward + backward; reduction: reduce-scatter, + all-reduce "
         "across replicas)\n";
    o << "  all-gather waits " << core::format_time(s.allgather_wait_s) << ", exposed reductions "
      << core::format_time(s.finalize_wait_s + s.reduce_wait_s);
    if (s.reduce_wait_s > 0)
      o << " (" << core::format_time(s.reduce_wait_s) << " of them in the backward, waiting for the previous unit's "
        << "reduce-scatter)";
    o << "\n";
    o << "  idx  unit                         AG bytes   AG alone AG exposed  RS bytes   RS alone RS exposed\n";
    const size_t shown = s.units.size() <= 12 ? s.units.size() : 10;
    for (size_t i = 0; i < shown; ++i) {
      const auto& u = s.units[i];
      char buf[240];
      std::snprintf(buf, sizeof buf, "  %3d  %-24.24s %11s %10s %10s %9s %10s %10s\n", u.index, u.name.c_str(),
                    core::format_bytes(u.allgather_bytes).c_str(), core::format_time(u.allgather_alone_s).c_str(),
                    core::format_time(u.allgather_exposed_s).c_str(), core::format_bytes(u.reduce_bytes).c_str(),
                    core::format_time(u.reduce_alone_s).c_str(), core::format_time(u.reduce_exposed_s).c_str());
      o << buf;
    }
    if (shown < s.units.size()) o << "  ... " << (s.units.size() - shown) << " more (use --json for all)\n";
  }
  if (!s.buckets.empty()) {
    o << "\nsteady-state buckets (times from the iteration start)\n";
    o << "  idx        size  tensors      ready      start        end    exposed      alone  NCCL est.  nccl\n";
    const size_t shown = s.buckets.size() <= 12 ? s.buckets.size() : 10;
    for (size_t i = 0; i < shown; ++i) {
      const auto& b = s.buckets[i];
      char buf[240];
      const std::string nccl = b.algorithm.empty() ? "" : b.algorithm + "/" + b.protocol;
      const std::string est = b.nccl_estimate_s > 0 ? core::format_time(b.nccl_estimate_s) : "-";
      std::snprintf(buf, sizeof buf, "  %3d %11s %8d %10s %10s %10s %10s %10s %10s  %s\n", b.index,
                    core::format_bytes(b.bytes).c_str(), b.num_tensors, core::format_time(b.ready_s).c_str(),
                    core::format_time(b.start_s).c_str(), core::format_time(b.end_s).c_str(),
                    core::format_time(b.exposed_s).c_str(), core::format_time(b.alone_s).c_str(), est.c_str(),
                    nccl.c_str());
      o << buf;
    }
    if (shown < s.buckets.size()) o << "  ... " << (s.buckets.size() - shown) << " more (use --json for all)\n";
    // Why the modelled all-reduce times differ from NCCL's estimates, once per distinct reason.
    std::vector<std::pair<std::string, std::vector<int>>> reasons;
    for (const auto& b : s.buckets) {
      if (b.vs_nccl.empty()) continue;
      const std::string key = b.algorithm + "/" + b.protocol + ": " + b.vs_nccl;
      auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == key; });
      if (it == reasons.end())
        reasons.push_back({key, {b.index}});
      else
        it->second.push_back(b.index);
    }
    if (!reasons.empty()) o << "  alone vs NCCL's estimate (collective --explain SIZE shows every candidate):\n";
    for (const auto& [why, idx] : reasons) {
      std::string list;
      for (size_t k = 0; k < idx.size(); ++k) {
        // Runs of consecutive indices as a-b.
        size_t e = k;
        while (e + 1 < idx.size() && idx[e + 1] == idx[e] + 1) ++e;
        // Appends in steps: GCC 12 warns falsely (-Wrestrict) on one concatenated expression.
        if (!list.empty()) list.push_back(',');
        list.append(std::to_string(idx[k]));
        if (e > k) {
          list.push_back('-');
          list.append(std::to_string(idx[e]));
        }
        k = e;
      }
      o << "    bucket" << (idx.size() > 1 ? "s " : " ") << list << ": " << why << "\n";
    }
  }
  return o.str();
}

Json to_chrome_trace(const StepReport& r) {
  Json events = Json::array();
  // One process per traced rank (pid = rank): its compute stream on tid 0; rank 0 also holds the
  // NCCL streams (tid 1 + s), since a collective is one job every rank takes part in.
  std::vector<TracedRank> ranks = r.traced_ranks;
  if (ranks.empty()) ranks.push_back({0, ""});
  // Named tracks (DataParallel): each process once, then its threads, in the order given.
  std::vector<int> named_pids;
  for (const auto& t : r.trace_tracks) {
    if (std::find(named_pids.begin(), named_pids.end(), t.pid) == named_pids.end()) {
      named_pids.push_back(t.pid);
      events.push_back(
          {{"name", "process_name"}, {"ph", "M"}, {"pid", t.pid}, {"tid", 0}, {"args", {{"name", t.process}}}});
      events.push_back(
          {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", t.pid}, {"tid", 0}, {"args", {{"sort_index", t.pid}}}});
    }
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", t.pid}, {"tid", t.tid}, {"args", {{"name", t.thread}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", t.pid},
                      {"tid", t.tid},
                      {"args", {{"sort_index", t.tid}}}});
  }
  if (!r.trace_tracks.empty()) ranks.clear();
  for (const auto& tr : ranks) {
    std::string name = "rank " + std::to_string(tr.rank) + " (" + r.gpu + ")";
    if (!tr.role.empty() && tr.role != "rank 0") name += " [" + tr.role + "]";
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", tr.rank}, {"tid", 0}, {"args", {{"name", name}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", tr.rank},
                      {"tid", 0},
                      {"args", {{"sort_index", tr.rank}}}});
  }
  int tracks = 2;
  for (const auto& e : r.trace) tracks = std::max(tracks, e.track + 1);
  for (const auto& tr : ranks) {
    const int streams = std::max(1, r.trace_comm_streams);
    for (int t = 0; t < (tr.rank == 0 ? tracks : 1); ++t) {
      std::string name = t == 0 ? "compute stream" : r.trace_comm_name;
      if (t > 0 && (tracks > 2 || r.trace_comm_workers > 1)) name.append(" ").append(std::to_string((t - 1) % streams));
      if (t > 0 && r.trace_comm_workers > 1) name.append(" worker ").append(std::to_string((t - 1) / streams));
      events.push_back(
          {{"name", "thread_name"}, {"ph", "M"}, {"pid", tr.rank}, {"tid", t}, {"args", {{"name", name}}}});
      events.push_back(
          {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", tr.rank}, {"tid", t}, {"args", {{"sort_index", t}}}});
    }
  }
  for (const auto& e : r.trace) {
    if (e.instant) {
      // Iteration markers: global scope, a line across every track.
      Json ev{{"name", e.name}, {"cat", e.category},    {"ph", "i"}, {"s", "g"}, {"pid", e.rank},
              {"tid", e.track}, {"ts", e.start_s * 1e6}};
      if (!e.args.is_null()) ev["args"] = e.args;
      events.push_back(std::move(ev));
      continue;
    }
    Json ev{{"name", e.name},        {"cat", e.category},        {"ph", "X"}, {"pid", e.rank}, {"tid", e.track},
            {"ts", e.start_s * 1e6}, {"dur", e.duration_s * 1e6}};
    if (!e.args.is_null()) ev["args"] = e.args;
    events.push_back(std::move(ev));
  }
  Json traced = Json::array();
  for (const auto& tr : r.traced_ranks.empty() && r.trace_tracks.empty() ? ranks : r.traced_ranks)
    traced.push_back({{"rank", tr.rank}, {"role", tr.role}});
  // Link utilisation per class (flow backend): counter tracks in a process of their own.
  if (!r.link_counters.empty()) {
    constexpr int kLinksPid = 1 << 24;  // apart from the ranks' processes
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", kLinksPid},
                      {"tid", 0},
                      {"args", {{"name", "network links (utilisation per class)"}}}});
    for (const auto& tr : r.link_counters)
      for (size_t i = 0; i < tr.t.size(); ++i)
        events.push_back({{"name", "link utilisation: " + tr.cls},
                          {"cat", "links"},
                          {"ph", "C"},
                          {"pid", kLinksPid},
                          {"tid", 0},
                          {"ts", tr.t[i] * 1e6},
                          {"args", {{"utilisation", tr.value[i]}}}});
  }
  return Json{{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"scenario", r.scenario}, {"world_size", r.world_size}, {"traced_ranks", traced}}}};
}

}  // namespace ddpsim::report
