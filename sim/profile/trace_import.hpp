#pragma once
// profile/: measured per-layer times from a torch.profiler (Kineto) Chrome trace, for
// `ddpsim import-trace` (the workload profile side of the inputs, not the scenario config).
//
// Input: what `torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True, with_stack=True,
// with_modules=True)` + `prof.export_chrome_trace(path)` writes: an object
// {"deviceProperties": [{"id", "name", ...}], "traceEvents": [...], ...} (kineto
// libkineto/src/output_json.cpp). Complete events ("ph": "X", "ts"/"dur" in microseconds, "pid",
// "tid", "args") are read by "cat":
//   - module calls: any event named "nn.Module: <Class>_<n>" (cat "python_function", recorded by the
//     Python tracer; torch/csrc/profiler/collection.cpp toString(PyCall)); <n> numbers the distinct
//     module objects of a class;
//   - "cpu_op": ATen ops and autograd nodes, with args "External id", and "Sequence number" when
//     recorded at the autograd dispatch level in grad mode (forward) or by a backward Node
//     (Node::operator(), with "Fwd thread id");
//   - "cuda_runtime"/"cuda_driver" (any cat ending in "_runtime"/"_driver"): the launch calls, with
//     args "correlation" (CUPTI) and "External id" (the innermost cpu_op then running);
//   - "kernel", "gpu_memcpy", "gpu_memset": GPU work, with args "correlation" and "External id".
//   Everything else (ac2g flows, user_annotation, metadata, ...) is ignored.
//
// Mapping rules
//  1. Module calls are nested per thread (pid, tid) by time. A call is a *layer call* when it runs
//     at least one own computing op: an outermost cpu_op whose innermost enclosing module call is
//     this one and which is not a pure view/alias/metadata/factory op (aten::view, t, transpose,
//     empty, detach, size, ...; reshape/flatten/contiguous/to count only when a nested op copies).
//     This mirrors scripts/export_model.py (views and free ops are not ops there). Layer calls are
//     ordered by the start of their first own computing op (the exporter sorts layers the same way).
//  2. A *forward* is a top-level module call (no enclosing module call on its thread); a
//     DistributedDataParallel / DataParallel / FullyShardedDataParallel wrapper is looked through
//     (its single wrapped call is the forward). Its layer calls correspond one-to-one, in order,
//     with the model's `layers`. A forward is a candidate when the counts are equal and no layer
//     type contradicts a known torch class (Conv*d -> conv2d, Linear/Conv1D -> linear,
//     BatchNorm*d -> batchnorm, LayerNorm/GroupNorm -> layernorm, Embedding* -> embedding,
//     *Pool*d -> pool, Softmax/LogSoftmax -> softmax; other classes match any type). Model layers
//     that are calls of one module ("relu", "relu#1") should be one trace instance ("ReLU_0"); a
//     violation is a warning. No candidate: ConfigError with both counts (or the first type
//     conflicts).
//  3. Several iterations: the LAST candidate forward whose backward is in the trace is used (the
//     first iterations pay warm-up costs: cudnn autotuning, allocator growth). A candidate without
//     any backward is used only when no candidate has one (then only fwd_time_s is set).
//  4. GPU traces (any kernel/memcpy/memset event): a GPU event belongs to the CPU instant that
//     launched it: the launch event with the same "correlation" (else the cpu_op with the same
//     "External id"). Forward time of a layer = sum of the durations of the GPU events launched
//     while the layer call is the innermost layer call running on the forward's thread. CPU-only
//     traces: forward time = self time of the cpu_ops whose innermost layer call is the layer
//     (an op's duration minus its nested cpu_ops').
//  5. Backward: each outermost "autograd::engine::evaluate_function: <Node>" cpu_op is one node
//     execution; its sequence number is the "Sequence number" of the nested cpu_op named <Node>
//     (else its own). The forward op that created node N is the LAST forward cpu_op (by start) on
//     the forward's thread that recorded "Sequence number" N (later ops record N+1; earlier ones
//     that recorded N created no node). The node's time (GPU: its launched GPU events; CPU: its
//     duration minus nested communication ops) goes to that op's layer. AccumulateGrad (no sequence
//     number) runs right after the node that made its gradient ready (it has the highest priority
//     in autograd's ReadyQueue), i.e. after the parameter's last-in-backward user, which is the
//     layer `layers[].params` lists it under: it goes to the layer of the immediately preceding
//     node on the same thread, or is ignored and counted in a warning. Nodes of other sequence
//     numbers (the loss, other iterations) are not attributed (a warning gives their time).
//  6. Communication is never layer time: kernels named "nccl*" and cpu_ops whose name contains
//     "c10d::", "nccl", "gloo" or "record_param_comms" (DDP's hooks run inside AccumulateGrad).
//  7. trace_forward_s / trace_backward_s: GPU traces: from the first start to the last end of the
//     GPU events attributed to the pass (kernels only, gaps included); CPU traces: the forward
//     call's duration, and the first backward node's start to the last one's end.
//
// The model JSON is only checked for the fields used here (layers[].name/type, batch_size); load
// it through Catalog first for the full ddpsim-model/1 validation.
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim::profile {

struct TraceImportResult {
  // The input model JSON with fwd_time_s/bwd_time_s (seconds) set on every layer it could time,
  // plus "measured_on" (the GPU's name from deviceProperties, or "torch.profiler trace <file>"
  // for CPU-only traces) and "measured_batch_size" (the model's batch_size unless given).
  core::Json model;
  int layers_timed = 0, layers_total = 0;
  double trace_forward_s = 0, trace_backward_s = 0;  // whole-pass times seen in the trace (rule 7)
  std::vector<std::string> warnings;                 // e.g. layers with no matching events
};

// Throws core::ConfigError ("file: /path-or-event-index: value: what is expected") when the trace
// is not a Kineto trace (e.g. the legacy profiler's plain event list), has no module events, or no
// forward matches the model's layers.
TraceImportResult import_trace(const core::Json& trace, const std::string& trace_file, const core::Json& model,
                               const std::string& model_file, std::optional<int> measured_batch_size = {});

// Reads a trace file: a gzip-compressed file (.json.gz, as tensorboard_trace_handler writes) is
// refused with a hint to decompress it; JSON syntax errors name the file, line and column.
core::Json read_trace_file(const std::string& file);

}  // namespace ddpsim::profile
