#include "config/sections.hpp"

#include <algorithm>

#include "config/nccl_names.hpp"
#include "core/text.hpp"

using ddpsim::core::Diagnostics;
using ddpsim::core::Json;
using ddpsim::core::ObjectReader;
using ddpsim::core::Quantity;

namespace ddpsim::config {

void check_zero_redundancy_optimizer(const Scenario& s, Diagnostics& d) {
  const auto& z = s.training.zero_redundancy_optimizer;
  if (!z.enabled) return;
  const std::string p = "/training/zero_redundancy_optimizer";
  // zero_redundancy_optimizer.py, _verify_same_dense_param_type: one dense type for all parameters.
  for (const auto& prm : s.model.params)
    if (!s.model.params.empty() && prm.dtype != s.model.params[0].dtype) {
      d.add(p, "true, but model \"" + s.model.name + "\" mixes parameter dtypes (" +
                   to_string(s.model.params[0].dtype) + " " + s.model.params[0].name + ", " + to_string(prm.dtype) +
                   " " + prm.name +
                   "); ZeroRedundancyOptimizer requires one dense type for all parameters; expected false");
      break;
    }
  if (!z.overlap_with_ddp) return;
  // ddp_zero_hook.py: ZeRO initializes once DDP has rebuilt its buckets, which it never does with
  // find_unused_parameters (unless static_graph): no step would ever run.
  if (s.ddp.find_unused_parameters && !s.ddp.static_graph)
    d.add(p + "/overlap_with_ddp",
          "true with ddp.find_unused_parameters and no static_graph: DDP never rebuilds its buckets, so the hook "
          "never initializes ZeRO and no optimizer step runs; expected false (or ddp.static_graph true)");
  // The step runs inside the comm hook, before the training loop could unscale or clip the gradients.
  if (s.training.clip_grad_norm)
    d.add(p + "/overlap_with_ddp",
          "true with training.clip_grad_norm: the step runs inside DDP's comm hook, before clip_grad_norm_ "
          "could run; expected false (or clip_grad_norm false)");
  if (s.training.compute_dtype == ComputeDtype::FLOAT16 && s.training.grad_scaler)
    d.add(p + "/overlap_with_ddp",
          "true with float16 and training.grad_scaler: the step runs inside DDP's comm hook, so "
          "GradScaler.unscale_/step cannot wrap it; expected false (or grad_scaler false, or bfloat16)");
}

std::string pytorch_rule_version(const std::string& torch_version) {
  return torch_version.rfind("1.", 0) == 0 ? "1.13" : "2.4";
}

namespace {
constexpr double kMaxBucketCapMb = 1e9;
}

DdpSettings parse_ddp(const Json& j, Diagnostics& d) {
  const DdpSettings def;
  DdpSettings s;
  ObjectReader dr(j, "/ddp", d);
  dr.accept("bucket_cap_mb");
  // null is Python's None, which PyTorch 2.x's DistributedDataParallel takes as "unset" (25 MiB and
  // the 1 MiB first bucket: distributed.py `if bucket_cap_mb is None: bucket_cap_mb = 25;
  // self.bucket_bytes_cap_default = True`), so a sweep can list the default beside explicit caps.
  // PyTorch 1.13 computes int(bucket_cap_mb * 1024 * 1024) and fails on None: checked below.
  const Json* cap_raw = dr.raw("bucket_cap_mb");
  const bool cap_none = cap_raw && cap_raw->is_null();
  if (dr.has("bucket_cap_mb") && !cap_none) {
    // int(mb * 1024 * 1024) must fit in int64 (PyTorch's size_t cap): 1e9 MiB (~1 PiB) is far below.
    s.bucket_cap_mb = dr.number_or("bucket_cap_mb", def.bucket_cap_mb, 0.0, true, kMaxBucketCapMb);
    s.bucket_cap_is_default = false;
  }
  if (const Json* f = dr.raw("first_bucket_cap_mb")) {
    if (!(f->is_string() && f->get<std::string>() == "auto")) {
      dr.accept("first_bucket_cap_mb");
      if (f->is_number() && f->get<double>() > 0 && f->get<double>() <= kMaxBucketCapMb)
        s.first_bucket_cap_mb = f->get<double>();
      else
        d.add_value("/ddp/first_bucket_cap_mb", *f, "a number > 0 and <= 1e+09 (MiB) or \"auto\"");
    }
  }
  s.find_unused_parameters = dr.boolean_or("find_unused_parameters", def.find_unused_parameters);
  s.broadcast_buffers = dr.boolean_or("broadcast_buffers", def.broadcast_buffers);
  s.comm_hook = comm_hook_names().value(dr.string_or("comm_hook", to_string(def.comm_hook), comm_hook_names().all()),
                                        def.comm_hook);
  if (const Json* qj = dr.raw("quantization")) {
    ObjectReader qr(*qj, "/ddp/quantization", d);
    const auto& qd = def.quantization;
    auto& q = s.quantization;
    q.bits = static_cast<int>(qr.integer_or("bits", qd.bits, 1, 8));
    if (q.bits != 1 && q.bits != 2 && q.bits != 4 && q.bits != 8) {
      d.add_value("/ddp/quantization/bits", *qr.raw("bits"), "1, 2, 4 or 8 (PyTorch's hooks: 8)");
      q.bits = qd.bits;
    }
    q.channel_size = static_cast<int>(qr.integer_or("channel_size", qd.channel_size, 1, 1 << 30));
    qr.finish();
  }
  if (const Json* pj = dr.raw("powersgd")) {
    ObjectReader pr(*pj, "/ddp/powersgd", d);
    const auto& pd = def.powersgd;
    auto& ps = s.powersgd;
    ps.matrix_approximation_rank =
        static_cast<int>(pr.integer_or("matrix_approximation_rank", pd.matrix_approximation_rank, 1, 1024));
    ps.start_powerSGD_iter = static_cast<int>(pr.integer_or("start_powerSGD_iter", pd.start_powerSGD_iter, 2, 1 << 30));
    ps.use_error_feedback = pr.boolean_or("use_error_feedback", pd.use_error_feedback);
    ps.batched = pr.boolean_or("batched", pd.batched);
    ps.min_compression_rate = pr.number_or("min_compression_rate", pd.min_compression_rate, 0.0, true, 1e9);
    pr.finish();
  }
  s.static_graph = dr.boolean_or("static_graph", def.static_graph);
  s.gradient_as_bucket_view = dr.boolean_or("gradient_as_bucket_view", def.gradient_as_bucket_view);
  const std::vector<std::string> versions{"1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7"};
  if (const Json* v = dr.raw("pytorch_version"); v && v->is_number()) {
    // `--set ddp.pytorch_version=1.13` arrives as a JSON number: read it as the version string.
    std::string text = core::short_dump(*v);
    if (std::find(versions.begin(), versions.end(), text) != versions.end())
      s.pytorch_version = text;
    else
      d.add_value("/ddp/pytorch_version", *v, "one of \"1.13\", \"2.0\" ... \"2.7\"");
  } else {
    s.pytorch_version = dr.string_or("pytorch_version", def.pytorch_version, versions);
  }
  if (cap_none && !s.recent_pytorch())
    d.add("/ddp/bucket_cap_mb",
          "null (None) with pytorch_version " + s.pytorch_version +
              ": PyTorch 1.13 computes int(bucket_cap_mb * 1024 * 1024) and raises a TypeError on None; expected a "
              "number > 0.0 and <= 1000000000.0, or leave it out for the default 25");
  dr.finish();
  return s;
}

namespace {
TrainingSettings::Fsdp parse_fsdp(const Json& j, Diagnostics& d) {
  const TrainingSettings::Fsdp def;
  TrainingSettings::Fsdp s;
  const std::string p = "/training/fsdp";
  ObjectReader fr(j, p, d);
  s.sharding_strategy = sharding_strategy_names().value(
      fr.string_or("sharding_strategy", to_string(def.sharding_strategy), sharding_strategy_names().all()),
      def.sharding_strategy);
  s.version = static_cast<int>(fr.integer_or("version", def.version, 1, 2));
  s.wrap = fsdp_wrap_names().value(fr.string_or("wrap", to_string(def.wrap), fsdp_wrap_names().all()), def.wrap);
  s.wrap_every = static_cast<int>(fr.integer_or("k", def.wrap_every, 1, 1 << 20));
  s.forward_prefetch = fr.boolean_or("forward_prefetch", def.forward_prefetch);
  s.backward_prefetch = backward_prefetch_names().value(
      fr.string_or("backward_prefetch", to_string(def.backward_prefetch), backward_prefetch_names().all()),
      def.backward_prefetch);
  s.limit_all_gathers = fr.boolean_or("limit_all_gathers", def.limit_all_gathers);
  s.no_sync = fr.boolean_or("no_sync", def.no_sync);
  s.reshard_after_backward = fr.boolean_or("reshard_after_backward", def.reshard_after_backward);
  s.cpu_offload = fr.boolean_or("cpu_offload", def.cpu_offload);
  s.num_to_forward_prefetch =
      static_cast<int>(fr.integer_or("num_to_forward_prefetch", def.num_to_forward_prefetch, 0, 1 << 20));
  s.num_to_backward_prefetch =
      static_cast<int>(fr.integer_or("num_to_backward_prefetch", def.num_to_backward_prefetch, 0, 1 << 20));
  if (const Json* v = fr.raw("reshard_after_forward")) {
    // fully_shard(reshard_after_forward: bool | int): an int is the group size to reshard to.
    if (v->is_boolean()) {
      s.reshard_after_forward = v->get<bool>();
    } else if (v->is_number_integer() && v->get<long long>() >= 1 && v->get<long long>() <= (1 << 24)) {
      s.reshard_after_forward_to = static_cast<int>(v->get<long long>());
      s.reshard_after_forward = s.reshard_after_forward_to > 1;
    } else {
      d.add(p + "/reshard_after_forward",
            core::short_dump(*v) +
                " is not allowed; expected true, false or an integer from 1 to 16777216 (FSDP2: the number of "
                "GPUs to reshard to after the forward, a divisor of the shard group)");
    }
  }
  const std::vector<std::string> dtypes{"float32", "bfloat16", "float16"};
  if (auto v = fr.string("param_dtype", false, dtypes)) s.param_dtype = parse_dtype(*v);
  if (auto v = fr.string("reduce_dtype", false, dtypes)) s.reduce_dtype = parse_dtype(*v);
  fr.finish();
  if (j.is_object())
    for (const auto& [k, v] : j.items()) s.keys_given.push_back(k);
  if (s.reshard_after_forward && s.version == 1)
    d.add(p + "/reshard_after_forward",
          (s.reshard_after_forward_to > 0 ? std::to_string(s.reshard_after_forward_to)
                                          : std::string(*s.reshard_after_forward ? "true" : "false")) +
              " with version 1: FullyShardedDataParallel has no reshard_after_forward (it follows "
              "sharding_strategy: SHARD_GRAD_OP keeps the parameters); expected it unset, or version 2");
  if (!s.reshard_after_backward && s.version == 1)
    d.add(p + "/reshard_after_backward",
          "false with version 1: FullyShardedDataParallel has no reshard_after_backward (under no_sync() "
          "SHARD_GRAD_OP keeps the parameters between micro-steps by itself); expected it unset, or version 2");
  for (const auto& [pass, n] : {std::pair<std::string, int>{"forward", s.num_to_forward_prefetch},
                                std::pair<std::string, int>{"backward", s.num_to_backward_prefetch}}) {
    const std::string key = "num_to_" + pass + "_prefetch";
    if (n > 0 && s.version == 1)
      d.add(p + "/" + key, std::to_string(n) + " with version 1: explicit prefetching (set_modules_to_" + pass +
                               "_prefetch) is fully_shard's; FullyShardedDataParallel has forward_prefetch and "
                               "backward_prefetch; expected 0 or unset, or version 2");
  }
  if (s.reshard_after_forward && *s.reshard_after_forward &&
      (s.sharding_strategy == ShardingStrategy::SHARD_GRAD_OP || s.sharding_strategy == ShardingStrategy::NO_SHARD))
    d.add(p + "/reshard_after_forward",
          (s.reshard_after_forward_to > 0 ? std::to_string(s.reshard_after_forward_to) : std::string("true")) +
              " with sharding_strategy \"" + to_string(s.sharding_strategy) +
              "\", which keeps the parameters unsharded after the forward; expected false or unset");
  return s;
}
}  // namespace

namespace {
// The ddp section's keys that only DDP's Reducer reads (torch/nn/parallel/distributed.py's
// constructor arguments): set away from their defaults under another wrapper, they change nothing.
std::vector<std::string> ddp_only_keys_set(const DdpSettings& ddp) {
  const DdpSettings def;
  std::vector<std::string> k;
  if (!ddp.bucket_cap_is_default) k.push_back("bucket_cap_mb");
  if (ddp.first_bucket_cap_mb) k.push_back("first_bucket_cap_mb");
  if (ddp.find_unused_parameters != def.find_unused_parameters) k.push_back("find_unused_parameters");
  if (ddp.static_graph != def.static_graph) k.push_back("static_graph");
  if (ddp.gradient_as_bucket_view != def.gradient_as_bucket_view) k.push_back("gradient_as_bucket_view");
  if (ddp.broadcast_buffers != def.broadcast_buffers) k.push_back("broadcast_buffers");
  return k;
}
}  // namespace

std::vector<std::string> fsdp_warnings(const Scenario& s) {
  std::vector<std::string> w;
  const auto& tr = s.training;
  if (tr.wrapper != Wrapper::DDP) {
    const auto keys = ddp_only_keys_set(s.ddp);
    if (!keys.empty()) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "ddp." : ", ddp.") + k;
      w.push_back(list + (keys.size() > 1 ? " are" : " is") +
                  " DistributedDataParallel's and ignored with training.wrapper \"" + to_string(tr.wrapper) + "\"" +
                  (tr.wrapper == Wrapper::FSDP
                       ? ": FSDP communicates per unit (training.fsdp.wrap sets the units)"
                       : ": DataParallel copies the parameters and buffers to every GPU at each forward and "
                         "sums the gradients onto GPU 0 after the backward"));
    }
  }
  // A wrapper's own section given under another wrapper changes nothing (e.g. --set
  // training.fsdp.sharding_strategy=FULL_SHARD without training.wrapper=fsdp still runs DDP).
  const auto other_wrappers_section = [&](const std::vector<std::string>& keys, const std::string& section,
                                          Wrapper owner, const std::string& what) {
    if (tr.wrapper == owner || keys.empty()) return;
    std::vector<std::string> paths;
    for (const auto& k : keys) paths.push_back("training." + section + "." + k);
    w.push_back(core::join(paths, ", ") + (keys.size() > 1 ? " are " : " is ") + what +
                "'s and ignored with training.wrapper \"" + to_string(tr.wrapper) + "\": set training.wrapper \"" +
                to_string(owner) + "\" to simulate " + what);
  };
  other_wrappers_section(tr.fsdp.keys_given, "fsdp", Wrapper::FSDP, "FullyShardedDataParallel");
  other_wrappers_section(tr.data_parallel.keys_given, "data_parallel", Wrapper::DATA_PARALLEL, "DataParallel");
  if (tr.wrapper != Wrapper::FSDP) {
    if (tr.activation_checkpointing != ActivationCheckpointing::NONE && tr.wrapper == Wrapper::DATA_PARALLEL)
      w.push_back("training.activation_checkpointing \"" + to_string(tr.activation_checkpointing) +
                  "\" is not modelled for training.wrapper \"data_parallel\"; it is ignored");
    return w;
  }
  const auto& f = tr.fsdp;
  if (f.sharding_strategy == ShardingStrategy::HYBRID_SHARD && s.cluster.nodes == 1)
    w.push_back(
        "training.fsdp.sharding_strategy HYBRID_SHARD on one node: the replica group has one member, so it "
        "is FULL_SHARD with an extra process group; HYBRID_SHARD pays off across nodes");
  if (f.sharding_strategy == ShardingStrategy::HYBRID_SHARD && s.cluster.nodes > 1 && s.cluster.gpus_per_node == 1)
    w.push_back(
        "training.fsdp.sharding_strategy HYBRID_SHARD with one GPU per node: every shard group has one "
        "member, so nothing is sharded (it is NO_SHARD)");
  if (f.version == 2 &&
      (f.forward_prefetch || f.backward_prefetch != BackwardPrefetch::BACKWARD_PRE || !f.limit_all_gathers))
    w.push_back(
        "training.fsdp: forward_prefetch, backward_prefetch and limit_all_gathers are FSDP1 arguments; "
        "version 2 (fully_shard) prefetches implicitly one unit ahead and ignores them (its explicit "
        "prefetching: num_to_forward_prefetch, num_to_backward_prefetch)");
  if (f.version == 2 && f.num_to_backward_prefetch > 0 && f.keeps_params_after_forward())
    w.push_back(
        "training.fsdp.num_to_backward_prefetch " + std::to_string(f.num_to_backward_prefetch) +
        " changes nothing: the parameters are kept unsharded from the forward (" +
        (f.sharding_strategy == ShardingStrategy::FULL_SHARD || f.sharding_strategy == ShardingStrategy::HYBRID_SHARD
             ? std::string("reshard_after_forward false")
             : "sharding_strategy " + to_string(f.sharding_strategy)) +
        "), so the backward all-gathers nothing");
  if (f.version == 2 && f.num_to_forward_prefetch > 0 && f.sharding_strategy == ShardingStrategy::NO_SHARD)
    w.push_back("training.fsdp.num_to_forward_prefetch " + std::to_string(f.num_to_forward_prefetch) +
                " changes nothing: NO_SHARD all-gathers nothing");
  if (f.version == 1 && !f.limit_all_gathers)
    w.push_back(
        "training.fsdp.limit_all_gathers false: every unit's all-gather may be issued ahead of the "
        "compute, so every unit can be unsharded at once (the memory estimate counts all of them)");
  if (f.wrap == FsdpWrap::ROOT && s.cluster.world_size() > 1 && f.sharding_strategy != ShardingStrategy::NO_SHARD)
    w.push_back(
        "training.fsdp.wrap \"root\": one unit holds every parameter, so the whole model is all-gathered "
        "before the forward and nothing overlaps with it");
  if (f.param_dtype && ((*f.param_dtype == DType::BFLOAT16 && tr.compute_dtype != ComputeDtype::BFLOAT16) ||
                        (*f.param_dtype == DType::FLOAT16 && tr.compute_dtype != ComputeDtype::FLOAT16)))
    w.push_back("training.fsdp.param_dtype " + to_string(*f.param_dtype) + " differs from training.compute_dtype " +
                to_string(tr.compute_dtype) + ": the compute times follow compute_dtype");
  if (f.version == 2 && f.reshard_after_forward_to == 1)
    w.push_back(
        "training.fsdp.reshard_after_forward 1 reshards to one GPU, that is not at all: the same as false "
        "(fully_shard warns the same)");
  const int shard_size = f.shard_group(s.cluster.gpus_per_node, s.cluster.world_size());
  if (f.version == 2 && f.reshard_after_forward_to > 1 && f.reshard_after_forward_to == shard_size)
    w.push_back("training.fsdp.reshard_after_forward " + std::to_string(shard_size) +
                " is the shard group's size: the same as true");
  if (!f.reshard_after_backward && f.sharding_strategy != ShardingStrategy::NO_SHARD &&
      tr.gradient_accumulation_steps == 1)
    w.push_back(
        "training.fsdp.reshard_after_backward false with gradient_accumulation_steps 1 changes nothing: "
        "the last micro-step reshards (set_reshard_after_backward(is_last)) so that the optimizer's update "
        "is all-gathered again");
  if (!f.reshard_after_backward && f.sharding_strategy == ShardingStrategy::NO_SHARD)
    w.push_back(
        "training.fsdp.reshard_after_backward false with sharding_strategy NO_SHARD changes nothing: "
        "NO_SHARD never reshards");
  if (s.cluster.world_size() == 1)
    w.push_back("training.wrapper \"fsdp\" on one GPU: there is nothing to shard and no collective runs");
  return w;
}

TrainingSettings parse_training(const Json& j, Diagnostics& d) {
  const TrainingSettings def;
  TrainingSettings s;
  ObjectReader tr(j, "/training", d);
  s.batch_size = static_cast<int>(tr.integer_or("batch_size", def.batch_size, 1, 1 << 24));
  s.compute_dtype = compute_dtype_names().value(
      tr.string_or("compute_dtype", to_string(def.compute_dtype), compute_dtype_names().all()), def.compute_dtype);
  s.optimizer = tr.string_or("optimizer", def.optimizer, {"sgd", "adam", "adamw"});
  s.optimizer_impl = tr.string_or("optimizer_impl", def.optimizer_impl, {"for_loop", "foreach", "fused"});
  s.optimizer_impl_set = tr.has("optimizer_impl");
  s.sgd_momentum = tr.boolean_or("sgd_momentum", def.sgd_momentum);
  if (const Json* z = tr.raw("zero_redundancy_optimizer")) {
    auto& zs = s.zero_redundancy_optimizer;
    if (z->is_boolean()) {
      zs.enabled = z->get<bool>();
    } else if (z->is_object()) {
      ObjectReader zr(*z, "/training/zero_redundancy_optimizer", d);
      zs.enabled = zr.boolean_or("enabled", true);
      zs.overlap_with_ddp = zr.boolean_or("overlap_with_ddp", def.zero_redundancy_optimizer.overlap_with_ddp);
      zs.parameters_as_bucket_view =
          zr.boolean_or("parameters_as_bucket_view", def.zero_redundancy_optimizer.parameters_as_bucket_view);
      zr.finish();
    } else {
      d.add_value("/training/zero_redundancy_optimizer", *z,
                  "true, false or an object {\"enabled\": true, \"overlap_with_ddp\": false, "
                  "\"parameters_as_bucket_view\": false}");
    }
  }
  s.gradient_accumulation_steps =
      static_cast<int>(tr.integer_or("gradient_accumulation_steps", def.gradient_accumulation_steps, 1, 1 << 16));
  s.clip_grad_norm = tr.boolean_or("clip_grad_norm", def.clip_grad_norm);
  s.zero_grad_set_to_none = tr.boolean_or("zero_grad_set_to_none", def.zero_grad_set_to_none);
  s.grad_scaler = tr.boolean_or("grad_scaler", def.grad_scaler);
  s.pin_memory = tr.boolean_or("pin_memory", def.pin_memory);
  s.non_blocking = tr.boolean_or("non_blocking", def.non_blocking);
  if (auto v = tr.number("loader_samples_per_s", false, 0.0, true)) s.loader_samples_per_s = v;
  if (auto v = tr.quantity("measured_single_gpu_step", Quantity::TIME, false)) s.measured_single_gpu_step_s = v;
  if (auto v = tr.quantity("measured_optimizer_step", Quantity::TIME, false)) s.measured_optimizer_step_s = v;
  if (auto v = tr.quantity("input_bytes_per_sample", Quantity::BYTES, false, true)) s.input_bytes_per_sample = v;
  // The per-kernel compute model's settings (gpu/kernel_model).
  if (auto v = tr.integer("seq_len", false, 1, 1 << 24)) s.seq_len = static_cast<int>(*v);
  if (auto v = tr.integer("image_size", false, 1, 1 << 16)) s.image_size = static_cast<int>(*v);
  s.attention = tr.string_or("attention", def.attention, {"eager", "sdpa_flash", "sdpa_mem_efficient"});
  s.memory_format = tr.string_or("memory_format", def.memory_format, {"contiguous_format", "channels_last"});
  s.loss = tr.string_or("loss", def.loss, {"auto", "cross_entropy", "none"});
  s.cuda_graphs = tr.boolean_or("cuda_graphs", def.cuda_graphs);
  s.fused_bias_gelu_dropout = tr.boolean_or("fused_bias_gelu_dropout", def.fused_bias_gelu_dropout);
  s.wrapper =
      wrapper_names().value(tr.string_or("wrapper", to_string(def.wrapper), wrapper_names().all()), def.wrapper);
  if (const Json* dj = tr.raw("data_parallel")) {
    ObjectReader pr(*dj, "/training/data_parallel", d);
    const auto& pd = def.data_parallel;
    auto& ps = s.data_parallel;
    ps.gil_share = pr.number_or("gil_share", pd.gil_share, 0.0, false, 1.0);
    ps.nccl = pr.boolean_or("nccl", pd.nccl);
    if (auto v = pr.quantity("output_bytes_per_sample", Quantity::BYTES, false, true)) ps.output_bytes_per_sample = v;
    ps.input_device = pr.string_or("input_device", pd.input_device, {"cuda:0", "cpu"});
    pr.finish();
    if (dj->is_object())
      for (const auto& [k, v] : dj->items()) ps.keys_given.push_back(k);
  }
  if (const Json* fj = tr.raw("fsdp")) s.fsdp = parse_fsdp(*fj, d);
  s.activation_checkpointing = activation_checkpointing_names().value(
      tr.string_or("activation_checkpointing", to_string(def.activation_checkpointing),
                   activation_checkpointing_names().all()),
      def.activation_checkpointing);
  s.activation_checkpointing_every =
      static_cast<int>(tr.integer_or("activation_checkpointing_every", def.activation_checkpointing_every, 1, 1 << 20));
  if (s.measured_optimizer_step_s && (s.zero_redundancy_optimizer.enabled || s.wrapper == Wrapper::FSDP))
    d.add("/training/measured_optimizer_step",
          std::to_string(*s.measured_optimizer_step_s) + " s is the step of a replicated optimizer; with " +
              (s.wrapper == Wrapper::FSDP ? "training.wrapper \"fsdp\"" : "training.zero_redundancy_optimizer") +
              " every rank steps its own shard; expected it unset");
  tr.finish();
  return s;
}

ComputeSettings parse_compute(const Json& j, Diagnostics& d) {
  const ComputeSettings def;
  ComputeSettings s;
  ObjectReader cr(j, "/compute", d);
  if (auto v = cr.number("flops_efficiency", false, 0.0, true, 1.0)) {
    s.flops_efficiency = *v;
    s.flops_efficiency_set = true;
  }
  if (const Json* bt = cr.raw("flops_efficiency_by_type")) {
    ObjectReader br(*bt, "/compute/flops_efficiency_by_type", d);
    for (const auto& t : layer_type_names())
      if (auto v = br.number(t, false, 0.0, true, 1.0)) s.flops_efficiency_by_type[t] = *v;
    br.finish();
  }
  s.memory_efficiency = cr.number_or("memory_efficiency", def.memory_efficiency, 0.0, true, 1.0);
  s.use_measured = cr.boolean_or("use_measured", def.use_measured);
  s.kernel_overhead = cr.quantity("kernel_overhead", Quantity::TIME, false, true).value_or(def.kernel_overhead);
  s.launch_latency = cr.quantity("launch_latency", Quantity::TIME, false, true).value_or(def.launch_latency);
  s.autograd_traversal_per_param = cr.quantity("autograd_traversal_per_param", Quantity::TIME, false, true)
                                       .value_or(def.autograd_traversal_per_param);
  cr.finish();
  return s;
}

namespace {

// An NCCL_ALGO / NCCL_PROTO value as NCCL reads it (allreduce_algos: a comma list,
// '^' to disable, "function:list" entries), stored as the names enabled for all-reduce in NCCL's
// spelling (empty: NCCL's defaults). A bad value is refused whole, saying what is allowed.
std::vector<std::string> nccl_name_list(ObjectReader& kr, const char* key, bool algo) {
  auto v = kr.string(key, false);
  if (!v) return {};
  try {
    return algo ? allreduce_algos(*v) : allreduce_protos(*v);
  } catch (const std::invalid_argument& e) {
    kr.diagnostics().add(std::string("/collective/") + key, core::short_dump(Json(*v)) + ": " + e.what());
    return {};
  }
}

// collective.measured_allreduce: [{"bytes": B, "seconds": T}, ...], at least two rows, bytes
// strictly ascending, both finite and > 0. A bad row is reported by its JSON path; the table is
// then dropped (the file is refused as a whole).
std::vector<std::pair<double, double>> measured_allreduce_table(const Json& t, Diagnostics& d) {
  const std::string path = "/collective/measured_allreduce";
  const std::string want =
      "expected an array of at least 2 objects {\"bytes\": B, \"seconds\": T} with 0 < B <= 1e18 strictly "
      "ascending and 0 < T <= 1e6";
  if (!t.is_array() || t.size() < 2) {
    d.add_value(path, t, want);
    return {};
  }
  std::vector<std::pair<double, double>> rows;
  bool ok = true;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string rp = path + "/" + std::to_string(i);
    ObjectReader r(t[i], rp, d);
    const auto b = r.number("bytes", true, 0.0, true, core::kMaxNumber);
    const auto s = r.number("seconds", true, 0.0, true, 1e6);
    r.finish();
    if (!b || !s) {
      ok = false;
      continue;
    }
    if (!rows.empty() && !(*b > rows.back().first)) {
      d.add_value(
          rp + "/bytes", t[i]["bytes"],
          "more than the previous row's " + core::short_dump(Json(rows.back().first)) + " (rows ascending in bytes)");
      ok = false;
    }
    rows.emplace_back(*b, *s);
  }
  if (!ok) return {};
  return rows;
}

}  // namespace

CollectiveSettings parse_collective(const Json& j, Diagnostics& d) {
  const CollectiveSettings def;
  CollectiveSettings s;
  ObjectReader kr(j, "/collective", d);
  s.model = collective_model_names().value(kr.string_or("model", to_string(def.model), collective_model_names().all()),
                                           def.model);
  s.base_latency = kr.quantity("base_latency", Quantity::TIME, false, true).value_or(def.base_latency);
  s.host_call = kr.quantity("host_call", Quantity::TIME, false, true);
  s.host_callback = kr.quantity("host_callback", Quantity::TIME, false, true);
  s.nccl_algo = nccl_name_list(kr, "NCCL_ALGO", true);
  s.nccl_proto = nccl_name_list(kr, "NCCL_PROTO", false);
  s.nccl_min_nchannels = static_cast<int>(kr.integer_or("NCCL_MIN_NCHANNELS", def.nccl_min_nchannels, 0, 64));
  s.nccl_max_nchannels = static_cast<int>(kr.integer_or("NCCL_MAX_NCHANNELS", def.nccl_max_nchannels, 0, 64));
  s.nccl_min_ctas = static_cast<int>(kr.integer_or("NCCL_MIN_CTAS", def.nccl_min_ctas, 0, 64));
  s.nccl_max_ctas = static_cast<int>(kr.integer_or("NCCL_MAX_CTAS", def.nccl_max_ctas, 0, 64));
  s.nccl_collnet_enable = static_cast<int>(kr.integer_or("NCCL_COLLNET_ENABLE", def.nccl_collnet_enable, 0, 1));
  s.nccl_cross_nic = static_cast<int>(kr.integer_or("NCCL_CROSS_NIC", def.nccl_cross_nic, 0, 2));
  // NCCL_BUFFSIZE (bytes, as NCCL reads it) and NCCL_NTHREADS: ranges first, then the alignment.
  if (auto v = kr.integer("NCCL_BUFFSIZE", false, 65536, 1073741824)) {
    const std::string bad = check_buffsize(static_cast<double>(*v));
    if (bad.empty())
      s.nccl_buffsize = static_cast<double>(*v);
    else
      d.add_value("/collective/NCCL_BUFFSIZE", *kr.raw("NCCL_BUFFSIZE"), bad);
  }
  if (auto v = kr.integer("NCCL_NTHREADS", false, 64, 512)) {
    const std::string bad = check_nthreads(static_cast<int>(*v));
    if (bad.empty())
      s.nccl_nthreads = static_cast<int>(*v);
    else
      d.add_value("/collective/NCCL_NTHREADS", *kr.raw("NCCL_NTHREADS"), bad);
  }
  if (const Json* t = kr.raw("measured_allreduce")) s.measured_allreduce = measured_allreduce_table(*t, d);
  if (!s.measured_allreduce.empty() && s.model != CollectiveModelKind::RING)
    d.add("/collective/measured_allreduce",
          "a measured table is used by the ring model only; set \"model\": \"ring\" or remove the table");
  if (auto v = kr.string("nccl_version", false)) {
    try {
      s.nccl_version = parse_nccl_version(*v);
    } catch (const std::invalid_argument& e) {
      d.add("/collective/nccl_version", e.what());
    }
  }
  kr.finish();
  return s;
}

SimulationSettings parse_simulation(const Json& j, Diagnostics& d) {
  const SimulationSettings def;
  SimulationSettings s;
  ObjectReader sr(j, "/simulation", d);
  s.backend =
      backend_names().value(sr.string_or("backend", to_string(def.backend), backend_names().all()), def.backend);
  s.fidelity =
      fidelity_names().value(sr.string_or("fidelity", to_string(def.fidelity), fidelity_names().all()), def.fidelity);
  s.ranks = rank_mode_names().value(sr.string_or("ranks", to_string(def.ranks), rank_mode_names().all()), def.ranks);
  s.seed = static_cast<uint64_t>(sr.integer_or("seed", static_cast<long long>(def.seed), 0, (1LL << 53)));
  s.reuse_rounds = sr.boolean_or("reuse_rounds", def.reuse_rounds);
  sr.finish();
  return s;
}

ContentionSettings parse_contention(const Json& j, Diagnostics& d) {
  const ContentionSettings def;
  ContentionSettings s;
  ObjectReader cr(j, "/contention", d);
  s.enabled = cr.boolean_or("enabled", def.enabled);
  if (auto v = cr.number("hbm_bytes_per_nccl_byte", false, 0.0)) s.hbm_bytes_per_nccl_byte = v;
  if (auto v = cr.number("comm_slowdown", false, 1.0)) s.comm_slowdown = v;
  s.max_slowdown = cr.number_or("max_slowdown", def.max_slowdown, 1.0);
  if (auto v = cr.number("compute_slowdown", false, 1.0)) s.compute_slowdown = v;
  cr.finish();
  return s;
}

StreamSettings parse_streams(const Json& j, Diagnostics& d) {
  const StreamSettings def;
  StreamSettings s;
  ObjectReader sr(j, "/streams", d);
  s.nccl_high_priority = sr.boolean_or("TORCH_NCCL_HIGH_PRIORITY", def.nccl_high_priority);
  s.cuda_device_max_connections =
      static_cast<int>(sr.integer_or("CUDA_DEVICE_MAX_CONNECTIONS", def.cuda_device_max_connections, 1, 32));
  s.comm_streams = static_cast<int>(sr.integer_or("comm_streams", def.comm_streams, 1, 16));
  s.comm_workers = static_cast<int>(sr.integer_or("comm_workers", def.comm_workers, 1, 16));
  sr.finish();
  return s;
}

StragglerSettings parse_stragglers(const Json& j, Diagnostics& d) {
  const StragglerSettings def;
  StragglerSettings s;
  ObjectReader gr(j, "/stragglers", d);
  s.jitter_cv = gr.number_or("jitter_cv", def.jitter_cv, 0.0, false, 2.0);
  s.steps = static_cast<int>(gr.integer_or("steps", def.steps, 1, 100000));
  if (const Json* sl = gr.raw("slow_ranks")) {
    if (!sl->is_array())
      d.add_value("/stragglers/slow_ranks", *sl, "an array of {\"rank\": R, \"factor\": F}");
    else
      for (size_t i = 0; i < sl->size(); ++i) {
        ObjectReader er((*sl)[i], "/stragglers/slow_ranks/" + std::to_string(i), d);
        auto rank = er.integer("rank", true, 0, (1 << 20));
        auto factor = er.number("factor", true, 0.0, true, 100.0);
        er.finish();
        if (rank && factor) s.slow_ranks.emplace_back(static_cast<int>(*rank), *factor);
      }
  }
  gr.finish();
  return s;
}

}  // namespace ddpsim::config
