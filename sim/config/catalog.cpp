#include "config/catalog.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <set>

#include "config/fabric_section.hpp"
#include "config/kernel_records.hpp"
#include "config/limits.hpp"
#include "config/nccl_names.hpp"
#include "config/overrides.hpp"
#include "config/sections.hpp"
#include "core/error.hpp"
#include "core/names.hpp"
#include "core/suggest.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Diagnostics;
using ddpsim::core::join_path;
using ddpsim::core::Json;
using ddpsim::core::ObjectReader;
using ddpsim::core::Quantity;

namespace ddpsim::config {

// ---------------------------------------------------------------- enums and small helpers

int dtype_size(DType t) {
  switch (t) {
    case DType::FLOAT64:
    case DType::INT64: return 8;
    case DType::FLOAT32:
    case DType::INT32: return 4;
    case DType::FLOAT16:
    case DType::BFLOAT16:
    case DType::INT16: return 2;
    case DType::INT8:
    case DType::UINT8:
    case DType::BOOL: return 1;
  }
  return 4;
}

namespace {
const std::vector<std::pair<std::string, DType>>& dtype_table() {
  static const std::vector<std::pair<std::string, DType>> t{{"float64", DType::FLOAT64}, {"float32", DType::FLOAT32},
                                                            {"float16", DType::FLOAT16}, {"bfloat16", DType::BFLOAT16},
                                                            {"int64", DType::INT64},     {"int32", DType::INT32},
                                                            {"int16", DType::INT16},     {"int8", DType::INT8},
                                                            {"uint8", DType::UINT8},     {"bool", DType::BOOL}};
  return t;
}
const std::vector<std::pair<std::string, LayerType>>& layer_table() {
  static const std::vector<std::pair<std::string, LayerType>> t{
      {"conv2d", LayerType::CONV2D},           {"linear", LayerType::LINEAR},
      {"matmul", LayerType::MATMUL},           {"batchnorm", LayerType::BATCHNORM},
      {"layernorm", LayerType::LAYERNORM},     {"embedding", LayerType::EMBEDDING},
      {"elementwise", LayerType::ELEMENTWISE}, {"pool", LayerType::POOL},
      {"softmax", LayerType::SOFTMAX},         {"other", LayerType::OTHER}};
  return t;
}
template <class E>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, E>>& t) {
  std::vector<std::string> out;
  for (const auto& [n, _] : t) out.push_back(n);
  return out;
}
}  // namespace

std::string to_string(DType t) {
  for (const auto& [n, v] : dtype_table())
    if (v == t) return n;
  return "?";
}
std::optional<DType> parse_dtype(const std::string& s) {
  for (const auto& [n, v] : dtype_table())
    if (n == s) return v;
  return std::nullopt;
}
std::vector<std::string> dtype_names() { return names_of(dtype_table()); }
std::string to_string(LayerType t) {
  for (const auto& [n, v] : layer_table())
    if (v == t) return n;
  return "?";
}
std::vector<std::string> layer_type_names() { return names_of(layer_table()); }

const core::Names<GpuArch>& gpu_arch_names() {
  static const core::Names<GpuArch> t{{"volta", GpuArch::VOLTA},
                                      {"ampere", GpuArch::AMPERE},
                                      {"ada", GpuArch::ADA},
                                      {"hopper", GpuArch::HOPPER},
                                      {"blackwell", GpuArch::BLACKWELL}};
  return t;
}
const core::Names<LinkKind>& link_kind_names() {
  static const core::Names<LinkKind> t{
      {"nvlink", LinkKind::NVLINK},     {"pcie", LinkKind::PCIE}, {"infiniband", LinkKind::INFINIBAND},
      {"ethernet", LinkKind::ETHERNET}, {"roce", LinkKind::ROCE}, {"efa", LinkKind::EFA}};
  return t;
}
const core::Names<IntraFabric>& intra_fabric_names() {
  static const core::Names<IntraFabric> t{{"nvswitch", IntraFabric::NVSWITCH},
                                          {"nvlink_mesh", IntraFabric::NVLINK_MESH},
                                          {"pcie", IntraFabric::PCIE},
                                          {"none", IntraFabric::NONE}};
  return t;
}
const core::Names<Backend>& backend_names() {
  static const core::Names<Backend> t{{"flow", Backend::FLOW}, {"analytic", Backend::ANALYTIC}};
  return t;
}
const core::Names<Fidelity>& fidelity_names() {
  static const core::Names<Fidelity> t{{"fused", Fidelity::FUSED}, {"stepwise", Fidelity::STEPWISE}};
  return t;
}
const core::Names<RankMode>& rank_mode_names() {
  static const core::Names<RankMode> t{{"representative", RankMode::REPRESENTATIVE}, {"all", RankMode::ALL}};
  return t;
}
// The string settings' tables (specs.hpp), each with its to_string beside it.
const core::Names<ComputeDtype>& compute_dtype_names() {
  static const core::Names<ComputeDtype> t{{"float32", ComputeDtype::FLOAT32},
                                           {"tf32", ComputeDtype::TF32},
                                           {"bfloat16", ComputeDtype::BFLOAT16},
                                           {"float16", ComputeDtype::FLOAT16},
                                           {"float64", ComputeDtype::FLOAT64}};
  return t;
}
std::string to_string(ComputeDtype d) { return compute_dtype_names().name(d); }
bool is_half_precision(ComputeDtype d) { return d == ComputeDtype::FLOAT16 || d == ComputeDtype::BFLOAT16; }
std::string to_string(CommHook h) { return comm_hook_names().name(h); }
const core::Names<CommHook>& comm_hook_names() {
  static const core::Names<CommHook> t{{"allreduce", CommHook::ALLREDUCE},
                                       {"allreduce_hook", CommHook::ALLREDUCE_HOOK},
                                       {"fp16_compress", CommHook::FP16_COMPRESS},
                                       {"bf16_compress", CommHook::BF16_COMPRESS},
                                       {"powersgd", CommHook::POWERSGD},
                                       {"quantize_per_tensor", CommHook::QUANTIZE_PER_TENSOR},
                                       {"quantize_per_channel", CommHook::QUANTIZE_PER_CHANNEL}};
  return t;
}
std::string to_string(Wrapper w) { return wrapper_names().name(w); }
const core::Names<Wrapper>& wrapper_names() {
  static const core::Names<Wrapper> t{
      {"ddp", Wrapper::DDP}, {"data_parallel", Wrapper::DATA_PARALLEL}, {"fsdp", Wrapper::FSDP}};
  return t;
}
std::string to_string(ShardingStrategy s) { return sharding_strategy_names().name(s); }
const core::Names<ShardingStrategy>& sharding_strategy_names() {
  static const core::Names<ShardingStrategy> t{{"FULL_SHARD", ShardingStrategy::FULL_SHARD},
                                               {"SHARD_GRAD_OP", ShardingStrategy::SHARD_GRAD_OP},
                                               {"NO_SHARD", ShardingStrategy::NO_SHARD},
                                               {"HYBRID_SHARD", ShardingStrategy::HYBRID_SHARD}};
  return t;
}
std::string to_string(FsdpWrap w) { return fsdp_wrap_names().name(w); }
const core::Names<FsdpWrap>& fsdp_wrap_names() {
  static const core::Names<FsdpWrap> t{
      {"block", FsdpWrap::BLOCK}, {"every_k_blocks", FsdpWrap::EVERY_K_BLOCKS}, {"root", FsdpWrap::ROOT}};
  return t;
}
std::string to_string(BackwardPrefetch b) { return backward_prefetch_names().name(b); }
const core::Names<BackwardPrefetch>& backward_prefetch_names() {
  static const core::Names<BackwardPrefetch> t{{"BACKWARD_PRE", BackwardPrefetch::BACKWARD_PRE},
                                               {"BACKWARD_POST", BackwardPrefetch::BACKWARD_POST},
                                               {"none", BackwardPrefetch::NONE}};
  return t;
}
std::string to_string(ActivationCheckpointing a) { return activation_checkpointing_names().name(a); }
const core::Names<ActivationCheckpointing>& activation_checkpointing_names() {
  static const core::Names<ActivationCheckpointing> t{{"none", ActivationCheckpointing::NONE},
                                                      {"full", ActivationCheckpointing::FULL},
                                                      {"selective_block", ActivationCheckpointing::SELECTIVE_BLOCK},
                                                      {"selective_op", ActivationCheckpointing::SELECTIVE_OP}};
  return t;
}
std::string to_string(CollectiveModelKind m) { return collective_model_names().name(m); }
const core::Names<CollectiveModelKind>& collective_model_names() {
  static const core::Names<CollectiveModelKind> t{{"nccl", CollectiveModelKind::NCCL},
                                                  {"ring", CollectiveModelKind::RING}};
  return t;
}
std::string to_string(GpuArch a) { return gpu_arch_names().name(a); }
std::string to_string(LinkKind k) { return link_kind_names().name(k); }
std::string to_string(IntraFabric f) { return intra_fabric_names().name(f); }
std::string to_string(Backend b) { return backend_names().name(b); }
std::string to_string(Fidelity f) { return fidelity_names().name(f); }
std::string to_string(RankMode m) { return rank_mode_names().name(m); }
std::string to_string(Kind k) {
  switch (k) {
    case Kind::MODEL: return "model";
    case Kind::GPU: return "GPU";
    case Kind::LINK: return "link";
    case Kind::CLUSTER: return "cluster";
    case Kind::SCENARIO: return "scenario";
  }
  return "?";
}

// [compute]
bool ModelSpec::has_kernels() const {
  for (const auto& l : layers)
    if (!l.kernels.empty()) return true;
  return false;
}

bool ModelSpec::has_measured_times() const {
  for (const auto& l : layers)
    if (l.fwd_time && l.bwd_time) return true;
  return false;
}

bool ModelSpec::has_layer_type(LayerType t) const {
  for (const auto& l : layers)
    if (l.type == t) return true;
  return false;
}

int64_t ModelSpec::total_numel() const {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel;
  return n;
}
double ModelSpec::grad_bytes() const {
  double b = 0;
  for (const auto& p : params)
    if (p.requires_grad) b += p.bytes();
  return b;
}

double DdpSettings::bucket_cap_bytes() const {
  // distributed.py: int(bucket_cap_mb * 1024 * 1024)
  return static_cast<double>(static_cast<int64_t>(bucket_cap_mb * 1024 * 1024));
}
bool DdpSettings::recent_pytorch() const { return pytorch_rule_version(pytorch_version) != "1.13"; }
double DdpSettings::first_bucket_cap_bytes() const {
  if (first_bucket_cap_mb) return static_cast<double>(static_cast<int64_t>(*first_bucket_cap_mb * 1024 * 1024));
  // dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB. Since PyTorch 2.x the Reducer is given the user's
  // bucket cap as first cap when bucket_cap_mb was set explicitly (distributed.py, Reducer(...)).
  if (recent_pytorch() && !bucket_cap_is_default) return bucket_cap_bytes();
  return 1024.0 * 1024.0;
}

// ---------------------------------------------------------------- model

namespace {

constexpr int64_t kMaxNumel = int64_t{1} << 40;  // elements of one tensor (4 TiB in float32)
constexpr size_t kMaxTensors = size_t{1} << 22;  // the format's bound; what can be simulated: config/limits

std::vector<int64_t> read_shape(const Json& j, const std::string& path, Diagnostics& d, bool* ok) {
  std::vector<int64_t> shape;
  if (!j.is_array()) {
    d.add_value(path, j, "an array of non-negative integers");
    *ok = false;
    return shape;
  }
  if (j.size() > 16) {
    d.add_value(path, j, "at most 16 dimensions");
    *ok = false;
    return shape;
  }
  int64_t numel = 1;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer() || (j[i].is_number_unsigned() && j[i].get<uint64_t>() > uint64_t{kMaxNumel}) ||
        j[i].get<int64_t>() < 0 || j[i].get<int64_t>() > kMaxNumel) {
      d.add_value(path + "/" + std::to_string(i), j[i], "an integer in [0, " + std::to_string(kMaxNumel) + "]");
      *ok = false;
    } else {
      shape.push_back(j[i].get<int64_t>());
      // Checked product: a shape such as [2^62, 4] must not wrap around.
      if (numel != 0 && (shape.back() > kMaxNumel / numel)) numel = -1;
      if (numel >= 0) numel *= shape.back();
    }
  }
  if (*ok && numel < 0) {
    d.add_value(
        path, j,
        "a shape of at most " + std::to_string(kMaxNumel) + " elements (2^40) in all; the product overflows it");
    *ok = false;
  }
  return shape;
}

std::vector<int> read_indices(const Json* j, const std::string& path, Diagnostics& d, size_t limit) {
  std::vector<int> out;
  if (!j) return out;
  if (!j->is_array()) {
    d.add_value(path, *j, "an array of parameter indices");
    return out;
  }
  for (size_t i = 0; i < j->size(); ++i) {
    const Json& v = (*j)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= static_cast<int64_t>(limit)) {
      d.add_value(path + "/" + std::to_string(i), v,
                  "a parameter index in [0, " + std::to_string(limit) + ") (the model has " + std::to_string(limit) +
                      " parameters)");
    } else {
      out.push_back(v.get<int>());
    }
  }
  return out;
}

// layers[i].bwd_param_ready: one share in [0, 1] per entry of the layer's `params`.
std::vector<double> read_param_ready(const Json& j, const std::string& layer_path, size_t nparams, Diagnostics& d) {
  const std::string path = layer_path + "/bwd_param_ready";
  const std::string allowed = "an array of " + std::to_string(nparams) + (nparams == 1 ? " number" : " numbers") +
                              " from 0 to 1, one per entry of params: the share of the layer's backward done when "
                              "that parameter's gradient is ready";
  std::vector<double> out;
  if (!j.is_array() || j.size() != nparams) {
    d.add_value(path, j, allowed);
    return out;
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& v = j[i];
    const double x = v.is_number() ? v.get<double>() : -1.0;
    if (!v.is_number() || !(x >= 0.0 && x <= 1.0)) {
      d.add_value(path + "/" + std::to_string(i), v, "a number from 0 to 1 (" + allowed + ")");
      return {};
    }
    out.push_back(x);
  }
  return out;
}

}  // namespace

ModelSpec parse_model(const Json& j, Diagnostics& d) {
  ModelSpec m;
  ObjectReader r(j, "", d);
  r.string("format", true, {"ddpsim-model/1"});
  m.name = r.string("name", true).value_or("");
  m.source = r.string_or("source", "");
  if (const Json* ew = r.raw("exported_with"); ew && ew->is_object()) {
    // The export input: its first dimension is the batch; the rest is one sample.
    auto shape = ew->find("input_shape");
    auto dtype = ew->find("input_dtype");
    if (shape != ew->end() && shape->is_array() && shape->size() >= 1 && dtype != ew->end() && dtype->is_string()) {
      auto dt = parse_dtype(dtype->get<std::string>());
      double elems = 1;
      bool ok = dt.has_value();
      for (size_t i = 1; i < shape->size(); ++i) {
        if (!(*shape)[i].is_number_integer())
          ok = false;
        else
          elems *= (*shape)[i].get<double>();
      }
      if (ok && elems >= 0 && elems <= 1e18) {
        m.input_bytes_per_sample = elems * dtype_size(*dt);
        m.input_dtype = dt;
        if ((*shape)[0].is_number_integer())
          for (const auto& x : *shape) m.input_shape.push_back(x.get<int64_t>());
      }
    }
  }
  r.raw("description");
  m.measured_on = r.string_or("measured_on", "");
  m.batch_size = static_cast<int>(r.integer("batch_size", true, 1, 1 << 24).value_or(1));
  m.measured_batch_size = static_cast<int>(r.integer_or("measured_batch_size", 0, 1, 1 << 24));
  m.measured_dtype = r.string_or("measured_dtype", "", dtype_names());
  m.measured_gpu = r.string_or("measured_gpu", "");
  m.measured_memory_format =
      r.string_or("measured_memory_format", "contiguous_format", {"contiguous_format", "channels_last"});

  const Json* params = r.raw("params");
  if (!params)
    d.add("/params", "missing; required: an array of parameters");
  else if (!params->is_array() || params->empty())
    d.add_value("/params", *params, "a non-empty array of parameters");
  else if (params->size() > kMaxTensors)
    d.add("/params", std::to_string(params->size()) + " parameters is not allowed; expected at most " +
                         std::to_string(kMaxTensors));
  else {
    for (size_t i = 0; i < params->size(); ++i) {
      std::string p = "/params/" + std::to_string(i);
      ObjectReader pr((*params)[i], p, d);
      ParamSpec ps;
      ps.name = pr.string("name", true).value_or("");
      bool ok = true;
      if (const Json* s = pr.raw("shape"))
        ps.shape = read_shape(*s, p + "/shape", d, &ok);
      else
        d.add(p + "/shape", "missing; required: an array of non-negative integers");
      auto dt = pr.string("dtype", true, dtype_names());
      if (dt) ps.dtype = *parse_dtype(*dt);
      ps.requires_grad = pr.boolean_or("requires_grad", true);
      pr.finish();
      ps.numel = 1;
      if (ok)
        for (auto x : ps.shape) ps.numel *= x;
      m.params.push_back(std::move(ps));
    }
  }

  if (const Json* bufs = r.raw("buffers")) {
    if (!bufs->is_array())
      d.add_value("/buffers", *bufs, "an array of buffers");
    else
      for (size_t i = 0; i < bufs->size(); ++i) {
        std::string p = "/buffers/" + std::to_string(i);
        ObjectReader br((*bufs)[i], p, d);
        BufferSpec b;
        b.name = br.string("name", true).value_or("");
        bool ok = true;
        if (const Json* s = br.raw("shape")) b.shape = read_shape(*s, p + "/shape", d, &ok);
        auto dt = br.string("dtype", true, dtype_names());
        if (dt) b.dtype = *parse_dtype(*dt);
        br.finish();
        b.numel = 1;
        if (ok)
          for (auto x : b.shape) b.numel *= x;
        m.buffers.push_back(std::move(b));
      }
  }

  const size_t np = m.params.size();
  std::vector<int> owner(np, -1);
  const Json* layers = r.raw("layers");
  if (!layers)
    d.add("/layers", "missing; required: an array of layers in forward order");
  else if (!layers->is_array() || layers->empty())
    d.add_value("/layers", *layers, "a non-empty array of layers");
  else {
    for (size_t i = 0; i < layers->size(); ++i) {
      std::string p = "/layers/" + std::to_string(i);
      ObjectReader lr((*layers)[i], p, d);
      LayerSpec l;
      l.name = lr.string("name", true).value_or("");
      auto ty = lr.string("type", true, layer_type_names());
      if (ty)
        for (const auto& [n, v] : layer_table())
          if (n == *ty) l.type = v;
      l.params = read_indices(lr.raw("params"), p + "/params", d, np);
      l.fwd_flops = lr.number_or("fwd_flops", 0, 0.0);
      l.bwd_flops = lr.number_or("bwd_flops", 0, 0.0);
      l.fwd_bytes = lr.number_or("fwd_bytes", 0, 0.0);
      l.bwd_bytes = lr.number_or("bwd_bytes", 0, 0.0);
      l.fwd_time = lr.number("fwd_time_s", false, 0.0);
      l.bwd_time = lr.number("bwd_time_s", false, 0.0);
      // [compute] per-kernel records (config/kernel_records.cpp)
      if (const Json* kr = lr.raw("kernels")) l.kernels = read_kernel_records(*kr, p + "/kernels", d);
      if (const Json* pr = lr.raw("bwd_param_ready")) l.param_ready = read_param_ready(*pr, p, l.params.size(), d);
      if (const Json* ho = lr.raw("host_ops")) read_host_ops(*ho, p + "/host_ops", l, d);
      lr.finish();
      for (int pi : l.params) {
        if (owner[pi] >= 0)
          d.add(p + "/params", "parameter " + std::to_string(pi) + " (" + m.params[pi].name +
                                   ") is already listed by layer " + std::to_string(owner[pi]) +
                                   "; each parameter belongs to exactly one layer");
        else
          owner[pi] = static_cast<int>(i);
      }
      m.layers.push_back(std::move(l));
    }
    for (size_t pi = 0; pi < np; ++pi)
      if (m.params[pi].requires_grad && owner[pi] < 0)
        d.add("/layers", "parameter " + std::to_string(pi) + " (" + m.params[pi].name +
                             ") requires grad but no layer lists it; each such parameter belongs to one layer");
  }

  // [compute] how the kernel records rescale (config/kernel_records.cpp)
  if (const Json* ks = r.raw("kernel_scaling")) read_kernel_scaling(*ks, m, d);
  if (const Json* un = r.raw("unused_params")) {
    m.unused_params = read_indices(un, "/unused_params", d, np);
    for (int pi : m.unused_params)
      if (!m.params[pi].requires_grad)
        d.add("/unused_params", "parameter " + std::to_string(pi) + " (" + m.params[pi].name +
                                    ") has requires_grad false; only trainable parameters can be unused");
  }
  const Json* order = r.raw("grad_ready_order");
  if (!order)
    d.add("/grad_ready_order", "missing; required: the requires_grad parameter indices in ready order");
  else {
    m.grad_ready_order = read_indices(order, "/grad_ready_order", d, np);
    std::vector<int> count(np, 0);
    for (int pi : m.grad_ready_order) count[pi]++;
    std::string missing, twice, frozen;
    for (size_t pi = 0; pi < np; ++pi) {
      if (m.params[pi].requires_grad && count[pi] == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(pi);
      if (count[pi] > 1) twice += (twice.empty() ? "" : ", ") + std::to_string(pi);
      if (!m.params[pi].requires_grad && count[pi] > 0) frozen += (frozen.empty() ? "" : ", ") + std::to_string(pi);
    }
    if (!missing.empty())
      d.add("/grad_ready_order",
            "misses requires_grad parameters " + missing + "; it must list every requires_grad parameter exactly once");
    if (!twice.empty()) d.add("/grad_ready_order", "lists parameters more than once: " + twice);
    if (!frozen.empty()) d.add("/grad_ready_order", "lists parameters with requires_grad false: " + frozen);
  }
  r.finish();
  return m;
}

// ---------------------------------------------------------------- hardware

GpuSpec parse_gpu(const Json& j, const std::string& path, Diagnostics& d) {
  GpuSpec g;
  ObjectReader r(j, path, d);
  g.name = r.string("name", true).value_or("");
  g.arch = gpu_arch_names().value(r.string("arch", true, gpu_arch_names().all()).value_or(""), GpuArch::AMPERE);
  if (const Json* pf = r.raw("peak_flops")) {
    ObjectReader pr(*pf, join_path(path, "peak_flops"), d);
    for (const char* k : {"float64", "float32", "tf32", "bfloat16", "float16"}) {
      auto v = pr.quantity(k, Quantity::FLOP_RATE, std::string(k) == "float32");
      if (v) g.peak_flops[k] = *v;
    }
    pr.finish();
  } else {
    d.add(join_path(path, "peak_flops"), "missing; required: an object of FLOP rates by dtype");
  }
  g.hbm_bandwidth = r.quantity("hbm_bandwidth", Quantity::BANDWIDTH, true).value_or(1e12);
  g.memory_bytes = r.quantity("memory", Quantity::BYTES, false).value_or(0);
  g.sm_count = static_cast<int>(r.integer_or("sm_count", 0, 1, 1024));
  // The host link: NCCL's per-generation PCIe figures (docs/facts.md §2) by default.
  const double default_host = g.arch == GpuArch::VOLTA                                      ? 12e9
                              : (g.arch == GpuArch::HOPPER || g.arch == GpuArch::BLACKWELL) ? 48e9
                                                                                            : 24e9;
  g.host_bandwidth = r.quantity("host_bandwidth", Quantity::BANDWIDTH, false).value_or(default_host);
  // 128 FP32 lanes per SM from Ada on; Ampere's GA100 has 64 and its GA10x parts 128, so an
  // Ampere GPU other than GA100 says so in its file (configs/gpus/rtx-3090.json).
  const int default_lanes = (g.arch == GpuArch::VOLTA || g.arch == GpuArch::AMPERE) ? 64 : 128;
  g.fp32_lanes_per_sm = static_cast<int>(r.integer_or("fp32_lanes_per_sm", default_lanes, 16, 1024));
  if (const Json* ej = r.raw("efficiency")) {
    ObjectReader er(*ej, join_path(path, "efficiency"), d);
    for (const char* dt : {"float64", "float32", "tf32", "bfloat16", "float16"}) {
      const Json* per = er.raw(dt);
      if (!per) continue;
      ObjectReader pr(*per, join_path(join_path(path, "efficiency"), dt), d);
      for (const auto& t : layer_type_names())
        if (auto v = pr.number(t, false, 0.0, true, 1.0)) g.efficiency[dt][t] = *v;
      pr.finish();
    }
    er.finish();
  }
  if (const Json* cj = r.raw("contention")) {
    ObjectReader cr(*cj, join_path(path, "contention"), d);
    if (auto v = cr.number("hbm_bytes_per_nccl_byte", false, 0.0)) g.hbm_bytes_per_nccl_byte = v;
    if (auto v = cr.number("comm_slowdown", false, 1.0)) g.comm_slowdown = v;
    cr.raw("sources");
    cr.finish();
  }
  r.raw("sources");
  r.raw("description");
  r.finish();
  return g;
}

LinkSpec parse_link(const Json& j, const std::string& path, Diagnostics& d) {
  LinkSpec l;
  ObjectReader r(j, path, d);
  l.name = r.string("name", true).value_or("");
  l.kind = link_kind_names().value(r.string("kind", true, link_kind_names().all()).value_or(""), LinkKind::NVLINK);
  l.bandwidth = r.quantity("bandwidth", Quantity::BANDWIDTH, true).value_or(1e9);
  l.latency = r.quantity("latency", Quantity::TIME, true, true).value_or(0);
  r.raw("sources");
  r.raw("description");
  r.finish();
  return l;
}

// ---------------------------------------------------------------- catalog

Catalog::Catalog(fs::path root) : root_(std::move(root)) {}

fs::path Catalog::default_root() {
  if (const char* env = std::getenv("DDPSIM_DATA_DIR"); env && *env) return fs::path(env);
#ifdef DDPSIM_SOURCE_DIR
  return fs::path(DDPSIM_SOURCE_DIR);
#else
  return fs::current_path();
#endif
}

fs::path Catalog::dir(Kind k) const {
  switch (k) {
    case Kind::MODEL: return root_ / "models";
    case Kind::GPU: return root_ / "configs" / "gpus";
    case Kind::LINK: return root_ / "configs" / "links";
    case Kind::CLUSTER: return root_ / "configs" / "clusters";
    case Kind::SCENARIO: return root_ / "scenarios";
  }
  return root_;
}

std::vector<std::string> Catalog::names(Kind k) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir(k), ec))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path Catalog::resolve(Kind k, const std::string& name, const fs::path& relative_to) const {
  std::error_code ec;
  if (name.empty()) throw core::ConfigError("empty " + to_string(k) + " name");
  fs::path p(name);
  if (p.is_absolute() && fs::is_regular_file(p, ec)) return p;
  if (!p.is_absolute()) {
    if (fs::is_regular_file(p, ec)) return p;
    if (!relative_to.empty() && fs::is_regular_file(relative_to / p, ec)) return relative_to / p;
    fs::path bundled = dir(k) / (name + ".json");
    if (name.find('/') == std::string::npos && fs::is_regular_file(bundled, ec)) return bundled;
  }
  std::string list;
  for (const auto& n : names(k)) list += (list.empty() ? "" : ", ") + n;
  throw core::ConfigError("\"" + name + "\" is neither a bundled " + to_string(k) + " nor a readable file" +
                          core::did_you_mean(name, names(k)) + "; bundled " + to_string(k) + "s (" + dir(k).string() +
                          "): " + (list.empty() ? "none" : list));
}

namespace {
// A measured profile's GPU: the file's `measured_gpu` (a bundled GPU name or a GPU file, relative
// to the model file), else the preset its `measured_on` device name maps to (none: unknown).
void resolve_measured_gpu(const Catalog& cat, ModelSpec& m, Diagnostics& d, const fs::path& base) {
  std::string name = m.measured_gpu;
  const bool given = !name.empty();
  if (!given) name = gpu_preset_for_device(m.measured_on);
  if (name.empty()) return;
  try {
    m.measured_gpu_spec = cat.load_gpu(cat.resolve(Kind::GPU, name, base));
    m.measured_gpu = name;
  } catch (const core::ConfigError& e) {
    if (!given) return;  // an inferred preset that this data directory lacks: no transfer
    for (const auto& p : e.problems()) d.add("/measured_gpu", p);
  }
}
}  // namespace

ModelSpec Catalog::load_model(const fs::path& file) const {
  Json j = core::read_json_file(file.string());
  Diagnostics d(file.string());
  ModelSpec m = parse_model(j, d);
  if (d.ok()) resolve_measured_gpu(*this, m, d, file.parent_path());
  d.throw_if_any();
  m.file = file.string();
  return m;
}

GpuSpec Catalog::load_gpu(const fs::path& file) const {
  Json j = core::read_json_file(file.string());
  Diagnostics d(file.string());
  GpuSpec g = parse_gpu(j, "", d);
  d.throw_if_any();
  g.file = file.string();
  return g;
}

LinkSpec Catalog::load_link(const fs::path& file) const {
  Json j = core::read_json_file(file.string());
  Diagnostics d(file.string());
  LinkSpec l = parse_link(j, "", d);
  d.throw_if_any();
  l.file = file.string();
  return l;
}

namespace {
// Runs `load` and turns a dangling-reference ConfigError into a problem at `path` of this file.
template <class F>
auto guarded(Diagnostics& d, const std::string& path, F&& load) -> std::optional<decltype(load())> {
  try {
    return load();
  } catch (const core::ConfigError& e) {
    for (const auto& p : e.problems()) d.add(path, p);
    return std::nullopt;
  }
}
}  // namespace

GpuSpec Catalog::gpu_ref(ObjectReader& r, const std::string& key, const fs::path& base) const {
  const Json* v = r.raw(key);
  std::string path = join_path(r.path(), key);
  if (!v) {
    r.diagnostics().add(path, "missing; required: a bundled GPU name, a file, or an inline GPU object");
    return {};
  }
  if (v->is_object()) return parse_gpu(*v, path, r.diagnostics());
  if (!v->is_string()) {
    r.diagnostics().add_value(path, *v, "a bundled GPU name, a file, or an inline GPU object");
    return {};
  }
  auto g = guarded(r.diagnostics(), path, [&] { return load_gpu(resolve(Kind::GPU, v->get<std::string>(), base)); });
  return g.value_or(GpuSpec{});
}

LinkSpec Catalog::link_ref(ObjectReader& r, const std::string& key, const fs::path& base, bool required,
                           bool* present) const {
  const Json* v = r.raw(key);
  std::string path = join_path(r.path(), key);
  if (present) *present = v != nullptr;
  if (!v) {
    if (required) r.diagnostics().add(path, "missing; required: a bundled link name, a file, or an inline link object");
    return {};
  }
  if (v->is_object()) return parse_link(*v, path, r.diagnostics());
  if (!v->is_string()) {
    r.diagnostics().add_value(path, *v, "a bundled link name, a file, or an inline link object");
    return {};
  }
  auto l = guarded(r.diagnostics(), path, [&] { return load_link(resolve(Kind::LINK, v->get<std::string>(), base)); });
  return l.value_or(LinkSpec{});
}

namespace {
ClusterSpec parse_cluster_body(const Catalog& cat, ObjectReader& r, const fs::path& base,
                               const std::function<GpuSpec()>& gpu,
                               const std::function<LinkSpec(ObjectReader&, const std::string&, bool, bool*)>& link) {
  (void)cat;
  (void)base;
  ClusterSpec c;
  c.name = r.string("name", true).value_or("");
  r.raw("description");
  r.raw("sources");
  c.gpu = gpu();
  c.nodes = static_cast<int>(r.integer("nodes", true, 1, 1 << 20).value_or(1));
  c.gpus_per_node = static_cast<int>(r.integer("gpus_per_node", true, 1, 1024).value_or(1));
  c.price_per_gpu_hour = r.number_or("price_per_gpu_hour", 0, 0.0);
  if (const Json* o = r.raw("ownership"))
    c.ownership = parse_ownership(*o, join_path(r.path(), "ownership"), r.diagnostics());
  if (const Json* intra = r.raw("intra_node")) {
    ObjectReader ir(*intra, join_path(r.path(), "intra_node"), r.diagnostics());
    c.fabric = intra_fabric_names().value(ir.string_or("fabric", "nvswitch", intra_fabric_names().all()),
                                          IntraFabric::NVSWITCH);
    c.intra_link = link(ir, "link", true, nullptr);
    c.links_per_gpu = static_cast<int>(ir.integer_or("links_per_gpu", 1, 1, 64));
    c.peer_links = static_cast<int>(ir.integer_or("peer_links", 0, 1, 64));
    c.p2p = ir.boolean_or("p2p", true);
    ir.accept("nvls");
    if (ir.has("nvls")) c.nvls = ir.boolean_or("nvls", false);
    ir.finish();
  } else if (c.gpus_per_node > 1) {
    r.diagnostics().add(join_path(r.path(), "intra_node"),
                        "missing; required when gpus_per_node > 1: {\"fabric\", \"link\", \"links_per_gpu\"}");
  }
  if (const Json* inter = r.raw("inter_node")) {
    ObjectReader nr(*inter, join_path(r.path(), "inter_node"), r.diagnostics());
    bool present = false;
    LinkSpec l = link(nr, "link", true, &present);
    if (present) c.inter_link = l;
    c.nics_per_node = static_cast<int>(nr.integer("nics_per_node", true, 1, 1024).value_or(1));
    c.nics_per_gpu = static_cast<int>(
        nr.integer_or("nics_per_gpu", std::max(1, c.nics_per_node / std::max(1, c.gpus_per_node)), 1, 1024));
    if (c.nics_per_gpu > c.nics_per_node)
      r.diagnostics().add(join_path(nr.path(), "nics_per_gpu"),
                          std::to_string(c.nics_per_gpu) + " is more than nics_per_node " +
                              std::to_string(c.nics_per_node) + "; allowed: 1 to nics_per_node");
    bool pcie_present = false;
    LinkSpec pl = link(nr, "pcie_link", false, &pcie_present);
    if (pcie_present) c.pcie_link = pl;
    c.net_latency = nr.quantity("extra_latency", Quantity::TIME, false, true).value_or(0.0);
    c.sharp = nr.boolean_or("sharp", false);
    c.net_plugin =
        nr.string_or("net_plugin", "", {"aws-ofi-nccl/p4d", "aws-ofi-nccl/p5", "aws-ofi-nccl/p5en", "aws-ofi-nccl/p6"});
    if (auto v = nr.string("net_plugin_version", false)) {
      const std::string at = join_path(nr.path(), "net_plugin_version");
      c.net_plugin_version = aws_ofi_version_code(*v);
      if (c.net_plugin_version == 0)
        r.diagnostics().add(
            at, "\"" + *v + "\" is not an aws-ofi-nccl release; allowed: MAJOR.MINOR.PATCH (e.g. \"1.9.1\")");
      else if (c.net_plugin.empty())
        r.diagnostics().add(at, "\"" + *v + "\" needs inter_node.net_plugin (the plugin it is a release of)");
    }
    nr.finish();
  }
  if (const Json* fj = r.raw("fabric")) {
    c.inter_fabric = parse_fabric(*fj, join_path(r.path(), "fabric"), r.diagnostics());
    c.fabric_json = fj->dump();
  }
  c.cpu = r.string_or("cpu", "intel", {"intel", "amd"});
  if (auto v = r.string("nccl_version", false)) {
    try {
      c.nccl_version = parse_nccl_version(*v);
    } catch (const std::invalid_argument& e) {
      r.diagnostics().add(join_path(r.path(), "nccl_version"), e.what());
    }
  }
  if (const Json* cal = r.raw("nccl_calibration")) {
    ObjectReader cr(*cal, join_path(r.path(), "nccl_calibration"), r.diagnostics());
    c.calibration.bw_scale_intra = cr.number_or("bw_scale_intra", 1.0, 0.0, true, 100.0);
    c.calibration.bw_scale_inter = cr.number_or("bw_scale_inter", 1.0, 0.0, true, 100.0);
    c.calibration.latency_scale = cr.number_or("latency_scale", 1.0, 0.0, false, 1000.0);
    // Seconds added to every collective's latency; negative when the fit shortens it.
    c.calibration.latency_offset = cr.number_or("latency_offset_s", 0.0, -1.0, false, 1.0);
    if (cr.has("launch_overhead_s"))
      c.calibration.launch_overhead = cr.number_or("launch_overhead_s", 0.0, 0.0, false, 1.0);
    auto achieved = [&](ObjectReader& ar) {
      ClusterSpec::Calibration::Achieved a;
      a.bw_factor = ar.number_or("bw_factor", 1.0, 0.0, true, 100.0);
      a.latency_offset = ar.number_or("latency_offset_s", 0.0, -1.0, false, 1.0);
      return a;
    };
    if (const Json* all = cr.raw("achieved_all")) {
      ObjectReader ar(*all, join_path(cr.path(), "achieved_all"), r.diagnostics());
      c.calibration.achieved_all = achieved(ar);
      ar.finish();
    }
    if (const Json* list = cr.raw("achieved")) {
      const std::string lpath = join_path(cr.path(), "achieved");
      if (!list->is_array()) {
        r.diagnostics().add_value(lpath, *list, "a list of {\"algo\", \"proto\", \"bw_factor\", \"latency_offset_s\"}");
      } else {
        for (size_t i = 0; i < list->size(); ++i) {
          ObjectReader ar((*list)[i], lpath + "/" + std::to_string(i), r.diagnostics());
          ClusterSpec::Calibration::PairAchieved pa;
          pa.algo = ar.string("algo", true, algo_names()).value_or("Ring");
          pa.proto = ar.string("proto", true, proto_names()).value_or("Simple");
          pa.achieved = achieved(ar);
          ar.finish();
          c.calibration.achieved.push_back(pa);
        }
      }
    }
    c.calibration.source = cr.string_or("source", "");
    c.calibration.nodes = static_cast<int>(cr.integer("nodes", false, 1, 1 << 20).value_or(0));
    cr.raw("fit");
    cr.finish();
  }
  return c;
}
}  // namespace

ClusterSpec Catalog::cluster_ref(ObjectReader& r, const std::string& key, const fs::path& base) const {
  const Json* v = r.raw(key);
  std::string path = join_path(r.path(), key);
  if (!v) {
    r.diagnostics().add(path, "missing; required: a bundled cluster name, a file, or an inline cluster object");
    return {};
  }
  if (v->is_object()) {
    ObjectReader cr(*v, path, r.diagnostics());
    ClusterSpec c = parse_cluster_body(
        *this, cr, base, [&] { return gpu_ref(cr, "gpu", base); },
        [&](ObjectReader& lr, const std::string& k, bool req, bool* present) {
          return link_ref(lr, k, base, req, present);
        });
    cr.finish();
    return c;
  }
  if (!v->is_string()) {
    r.diagnostics().add_value(path, *v, "a bundled cluster name, a file, or an inline cluster object");
    return {};
  }
  auto c =
      guarded(r.diagnostics(), path, [&] { return load_cluster(resolve(Kind::CLUSTER, v->get<std::string>(), base)); });
  return c.value_or(ClusterSpec{});
}

ClusterSpec Catalog::load_cluster(const fs::path& file) const {
  Json j = core::read_json_file(file.string());
  Diagnostics d(file.string());
  ObjectReader r(j, "", d);
  fs::path base = file.parent_path();
  ClusterSpec c = parse_cluster_body(
      *this, r, base, [&] { return gpu_ref(r, "gpu", base); },
      [&](ObjectReader& lr, const std::string& k, bool req, bool* present) {
        return link_ref(lr, k, base, req, present);
      });
  r.finish();
  if (d.ok() && c.nodes > 1 && !c.inter_link)
    d.add("/inter_node", "missing; required when nodes > 1: {\"link\", \"nics_per_node\"}");
  d.throw_if_any();
  c.file = file.string();
  return c;
}

Scenario Catalog::load_scenario(const fs::path& file, const std::vector<std::string>& overrides) const {
  Json j = core::read_json_file(file.string());
  apply_overrides(j, overrides);
  std::string label = file.string();
  if (!overrides.empty()) {
    label += " (with --set";
    for (const auto& o : overrides) label += " " + o;
    label += ")";
  }
  Scenario s = scenario_from_json(j, label, file.parent_path());
  if (!j.contains("name")) s.name = file.stem().string();
  s.file = file.string();
  return s;
}

namespace {

// torch.nn.DataParallel (plan/dp_builder.hpp) is one process driving the GPUs of one node.
void check_data_parallel(const Scenario& s, Diagnostics& d) {
  if (s.cluster.nodes > 1)
    d.add("/nodes", std::to_string(s.cluster.nodes) +
                        " nodes with training.wrapper \"data_parallel\": torch.nn.DataParallel is a single process "
                        "driving the GPUs of one machine; expected 1 node (use \"ddp\" across nodes)");
  if (s.training.gradient_accumulation_steps > 1)
    d.add("/training/gradient_accumulation_steps",
          std::to_string(s.training.gradient_accumulation_steps) +
              " with training.wrapper \"data_parallel\": not modelled for DataParallel; expected 1");
  if (s.stragglers.explicit_ranks())
    d.add("/stragglers",
          "jitter or slow ranks with training.wrapper \"data_parallel\": not modelled for "
          "DataParallel; expected none");
  // Neither exists for one process: ZeroRedundancyOptimizer shards over a process group's ranks,
  // comm hooks are DDP's Reducer's (DataParallel reduces with comm.reduce_add_coalesced).
  if (s.training.zero_redundancy_optimizer.enabled)
    d.add("/training/zero_redundancy_optimizer",
          "true with training.wrapper \"data_parallel\": ZeroRedundancyOptimizer shards the optimizer over a process "
          "group's ranks, and DataParallel is one process; expected false");
  if (s.ddp.comm_hook != CommHook::ALLREDUCE)
    d.add("/ddp/comm_hook", "\"" + to_string(s.ddp.comm_hook) +
                                "\" with training.wrapper \"data_parallel\": comm hooks are DDP's (its Reducer's); "
                                "DataParallel reduces the gradients with reduce_add_coalesced; expected \"allreduce\"");
}

// FullyShardedDataParallel / fully_shard: what the FSDP plan (plan/fsdp_builder.hpp) does not model.
void check_fsdp(const Scenario& s, Diagnostics& d) {
  const std::string w = " with training.wrapper \"fsdp\": ";
  if (s.training.zero_redundancy_optimizer.enabled)
    d.add("/training/zero_redundancy_optimizer", "true" + w + "FSDP shards the optimizer state itself; expected false");
  // FSDP2 reshard_after_forward N (_get_post_forward_mesh_info): N divides the shard group, and the
  // post-forward group of N consecutive ranks lies within a node or over whole nodes.
  const auto& f = s.training.fsdp;
  if (f.version == 2 && f.reshard_after_forward_to > 1) {
    const int k = f.reshard_after_forward_to, g = s.cluster.gpus_per_node;
    const int shard = f.shard_group(g, s.cluster.world_size());
    if (k > shard || shard % k != 0)
      d.add("/training/fsdp/reshard_after_forward",
            std::to_string(k) + " with a shard group of " + std::to_string(shard) +
                " GPUs: fully_shard reshards to a factor of the shard group's size; expected true, false or a divisor "
                "of " +
                std::to_string(shard));
    else if (k < shard && (k <= g ? g % k != 0 : k % g != 0))
      d.add("/training/fsdp/reshard_after_forward",
            std::to_string(k) + " GPUs of consecutive ranks would hold part of a node beside another node's (" +
                std::to_string(g) + " GPUs per node), which is not modelled; expected a divisor of " +
                std::to_string(g) + " or a multiple of it");
  }
  if (f.cpu_offload) {
    // What the offload plan does not cover (plan/fsdp_builder.hpp): the CPU optimizer's costs were
    // measured for torch 1.13's for_loop and foreach implementations only, and each refusal names
    // a path of FSDP's source the plan does not follow.
    const std::string o = "true: ";
    const int world = s.cluster.world_size();
    if (f.shard_group(s.cluster.gpus_per_node, world) <= 1 || world <= 1)
      d.add("/training/fsdp/cpu_offload",
            o + "with " +
                (world <= 1 ? std::string("one GPU") : "sharding_strategy \"" + to_string(f.sharding_strategy) + "\"") +
                " nothing is sharded, and an unsharded offload (FlatParamHandle.pre_unshard copying the whole "
                "parameter in) is not modelled; expected false, or a sharded strategy on more than one GPU");
    // Under no_sync the micro-steps before the last keep the unsharded gradients on the GPU and
    // only the last reduces and copies its shard to the host (modelled). Reducing every micro-step
    // accumulates on the host: FSDP1 does not support it (its docstring: "FSDP currently does not
    // support gradient accumulation outside no_sync() when using CPU offloading ... incorrect
    // results"), FSDP2's foreach_reduce copies blocking and adds on the CPU (not modelled).
    if (s.training.gradient_accumulation_steps > 1 && !f.no_sync)
      d.add("/training/fsdp/no_sync",
            "false with training.fsdp.cpu_offload true and training.gradient_accumulation_steps " +
                std::to_string(s.training.gradient_accumulation_steps) +
                (f.version == 1 ? std::string(": FullyShardedDataParallel does not support gradient accumulation "
                                              "outside no_sync() with CPU offloading (its docstring: it uses the "
                                              "newly-reduced gradient, the results are incorrect)")
                                : std::string(": accumulating the offloaded gradient shards on the host (FSDP2 "
                                              "foreach_reduce's blocking copy and CPU add) is not modelled")) +
                "; expected true (accumulate unsharded on the GPU, reduce and offload in the last micro-step)");
    if (s.training.optimizer_impl == "fused")
      d.add("/training/optimizer_impl",
            "\"fused\" with training.fsdp.cpu_offload true: the optimizer steps on the CPU, and the CPU costs were "
            "measured for torch's for_loop and foreach implementations; expected \"for_loop\" or \"foreach\"");
  }
  if (s.stragglers.explicit_ranks())
    d.add("/stragglers", "jitter or slow ranks" + w + "not modelled (one representative rank); expected none");
  if (s.ddp.comm_hook != CommHook::ALLREDUCE)
    d.add("/ddp/comm_hook", "\"" + to_string(s.ddp.comm_hook) + "\"" + w +
                                "DDP's comm hooks do not apply to FSDP; expected \"allreduce\" (use "
                                "training.fsdp.reduce_dtype for low-precision reduction)");
}

}  // namespace

Scenario Catalog::scenario_from_json(const Json& j, const std::string& label, const fs::path& base) const {
  Diagnostics d(label);
  Scenario s;
  ObjectReader r(j, "", d);
  s.name = r.string_or("name", fs::path(label).stem().string());
  s.description = r.string_or("description", "");

  // Model: a bundled name, a file, or an inline model object.
  if (const Json* m = r.raw("model")) {
    if (m->is_string()) {
      auto mm = guarded(d, "/model", [&] { return load_model(resolve(Kind::MODEL, m->get<std::string>(), base)); });
      if (mm) s.model = std::move(*mm);
    } else if (m->is_object()) {
      Diagnostics md(label + " /model");
      s.model = parse_model(*m, md);
      if (md.ok()) resolve_measured_gpu(*this, s.model, md, base);
      for (const auto& p : md.problems()) d.add("/model", p);
    } else {
      d.add_value("/model", *m, "a bundled model name, a model file, or an inline model object");
    }
  } else {
    d.add("/model", "missing; required: a bundled model name or a model file");
  }

  s.cluster = cluster_ref(r, "cluster", base);
  if (auto n = r.integer("nodes", false, 1, 1 << 20)) s.cluster.nodes = static_cast<int>(*n);
  if (auto g = r.integer("gpus_per_node", false, 1, 1024)) s.cluster.gpus_per_node = static_cast<int>(*g);
  if (d.ok() && s.cluster.nodes > 1 && !s.cluster.inter_link)
    d.add("/nodes", std::to_string(s.cluster.nodes) + " nodes need a cluster with an inter_node link; cluster \"" +
                        s.cluster.name + "\" has none");
  // A scenario's `fabric` overrides its cluster's key by key (config/fabric_section.hpp).
  if (const Json* fj = r.raw("fabric")) {
    Json merged = s.cluster.fabric_json.empty() ? Json::object() : Json::parse(s.cluster.fabric_json);
    if (fj->is_object())
      merged.merge_patch(*fj);
    else
      d.add_value("/fabric", *fj, "an object of fabric settings");
    s.cluster.inter_fabric = parse_fabric(merged, "/fabric", d);
  }
  if (d.ok())
    check_fabric_wiring(s.cluster.inter_fabric, s.cluster.nodes, s.cluster.nics_per_node,
                        s.cluster.inter_link ? s.cluster.inter_link->bandwidth : 0.0, "/fabric", d);

  // One parser per section (config/sections.hpp); absent sections keep the defaults.
  if (const Json* v = r.raw("ddp")) s.ddp = parse_ddp(*v, d);
  if (const Json* v = r.raw("training")) s.training = parse_training(*v, d);
  if (const Json* v = r.raw("compute")) s.compute = parse_compute(*v, d);
  if (const Json* v = r.raw("collective")) s.collective = parse_collective(*v, d);
  if (const Json* v = r.raw("simulation")) s.simulation = parse_simulation(*v, d);
  if (const Json* v = r.raw("contention")) s.contention = parse_contention(*v, d);
  if (const Json* v = r.raw("streams")) s.streams = parse_streams(*v, d);
  if (const Json* v = r.raw("stragglers")) s.stragglers = parse_stragglers(*v, d);
  if (const Json* v = r.raw("limits")) s.limits = parse_limits(*v, d);
  r.finish();
  // torch's own optimizer implementation for the release named, unless the scenario chose one.
  if (!s.training.optimizer_impl_set && !s.ddp.recent_pytorch()) s.training.optimizer_impl = "for_loop";
  // torch 1.13 has one fused optimizer, Adam (torch/optim/adam.py `fused`); its SGD and AdamW take
  // no `fused` argument.
  if (s.training.optimizer_impl == "fused" && !s.ddp.recent_pytorch() && s.training.optimizer != "adam")
    d.add("/training/optimizer_impl", "\"fused\" with optimizer \"" + s.training.optimizer +
                                          "\" under ddp.pytorch_version 1.13: torch 1.13 has a fused Adam only; "
                                          "expected \"for_loop\" or \"foreach\" (or optimizer \"adam\")");
  for (size_t i = 0; i < s.stragglers.slow_ranks.size(); ++i)
    if (d.ok() && s.stragglers.slow_ranks[i].first >= s.cluster.world_size())
      d.add("/stragglers/slow_ranks/" + std::to_string(i) + "/rank",
            std::to_string(s.stragglers.slow_ranks[i].first) + " is not a rank of this " +
                std::to_string(s.cluster.world_size()) + "-GPU cluster; expected 0.." +
                std::to_string(s.cluster.world_size() - 1));
  if (d.ok() && s.training.wrapper == Wrapper::DATA_PARALLEL) check_data_parallel(s, d);
  if (d.ok() && s.training.wrapper == Wrapper::FSDP) check_fsdp(s, d);
  if (d.ok() && !s.model.unused_params.empty() && !s.ddp.find_unused_parameters && s.cluster.world_size() > 1 &&
      s.training.wrapper == Wrapper::DDP)
    d.add("/ddp/find_unused_parameters",
          "false, but model \"" + s.model.name + "\" has " + std::to_string(s.model.unused_params.size()) +
              " parameter(s) its forward does not use (first: " + s.model.params[s.model.unused_params[0]].name +
              "); PyTorch DDP would stop with \"Expected to have finished reduction in the prior iteration\"; "
              "expected true");
  if (d.ok() && s.training.compute_dtype != ComputeDtype::FLOAT32 &&
      !s.cluster.gpu.peak_flops.count(to_string(s.training.compute_dtype)))
    d.add("/training/compute_dtype", "\"" + to_string(s.training.compute_dtype) +
                                         "\" has no peak_flops entry in GPU \"" + s.cluster.gpu.name + "\"");
  if (d.ok()) check_zero_redundancy_optimizer(s, d);
  if (d.ok()) check_limits(s, d);  // before any work starts (config/limits.hpp)
  d.throw_if_any();
  return s;
}

}  // namespace ddpsim::config
