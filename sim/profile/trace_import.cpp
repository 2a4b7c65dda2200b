#include "profile/trace_import.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"

namespace ddpsim::profile {

using core::ConfigError;
using core::Diagnostics;
using core::Json;

namespace {

constexpr double kUs = 1e-6;  // trace timestamps and durations are microseconds
constexpr const char* kModulePrefix = "nn.Module: ";
constexpr const char* kEvalPrefix = "autograd::engine::evaluate_function: ";
constexpr const char* kRecordHint =
    "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
    "record_shapes=True, with_stack=True, with_modules=True) and prof.export_chrome_trace(...)";

// A complete ("ph": "X") event: [start, end] in microseconds on one CPU thread or GPU stream.
struct Span {
  int index = 0;  // position in traceEvents (for messages)
  double start = 0, end = 0;
  std::string thread;  // "pid/tid"
};

struct ModuleCall {
  Span span;
  std::string instance;  // "Linear_0"
  std::string cls;       // "Linear"
  int parent = -1;
  std::vector<int> children;
  double first_op = std::numeric_limits<double>::infinity();  // start of its first own computing op
  bool computes = false;
  int forward = -1, slot = -1;  // which forward and which layer of it (layer calls only)
};

struct CpuOp {
  Span span;
  std::string name;
  const Json* args = nullptr;
  std::optional<long long> seq, external_id;
  int parent = -1;  // enclosing cpu_op
  std::vector<int> children;
  int module = -1;  // innermost module call containing its start
  bool comm = false;
};

struct GpuEvent {
  Span span;
  std::string name, pid;
  std::optional<long long> correlation, external_id;
};

struct Forward {
  int call = -1;            // module call of the forward (wrapper looked through)
  std::vector<int> layers;  // layer calls in order
};

// Nested intervals per thread: parent links and "innermost interval containing t".
class Nesting {
 public:
  void build(const std::vector<Span>& spans) {
    spans_ = &spans;
    parent_.assign(spans.size(), -1);
    by_thread_.clear();
    for (size_t i = 0; i < spans.size(); ++i) by_thread_[spans[i].thread].push_back(static_cast<int>(i));
    for (auto& [thread, ids] : by_thread_) {
      std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
        if (spans[a].start != spans[b].start) return spans[a].start < spans[b].start;
        return spans[a].end > spans[b].end;  // the outer one first
      });
      std::vector<int> stack;
      for (int id : ids) {
        while (!stack.empty() && spans[stack.back()].end <= spans[id].start && spans[stack.back()].end < spans[id].end)
          stack.pop_back();
        parent_[id] = stack.empty() ? -1 : stack.back();
        stack.push_back(id);
      }
    }
  }
  int parent(int i) const { return parent_[i]; }
  // The innermost span of `thread` with start <= t <= end, or -1. Correct for properly nested spans:
  // the last span starting at or before t either contains t or lies inside every span that does.
  int innermost(const std::string& thread, double t) const {
    auto it = by_thread_.find(thread);
    if (it == by_thread_.end()) return -1;
    const auto& ids = it->second;
    auto pos = std::upper_bound(ids.begin(), ids.end(), t, [&](double v, int id) { return v < (*spans_)[id].start; });
    if (pos == ids.begin()) return -1;
    int c = *(pos - 1);
    while (c != -1 && (*spans_)[c].end < t) c = parent_[c];
    return c;
  }

 private:
  const std::vector<Span>* spans_ = nullptr;
  std::vector<int> parent_;
  std::map<std::string, std::vector<int>> by_thread_;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::string id_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::optional<long long> int_arg(const Json* args, const char* key) {
  if (!args || !args->is_object()) return std::nullopt;
  auto it = args->find(key);
  if (it == args->end() || !it->is_number() || !(std::fabs(it->get<double>()) <= 1e18)) return std::nullopt;
  return static_cast<long long>(std::llround(it->get<double>()));
}

std::string fmt_ms(double s) {
  std::ostringstream o;
  o.precision(4);
  o << s * 1e3 << " ms";
  return o.str();
}

// Ops that are no computation: views, aliases, metadata queries, allocations, factories
// (scripts/export_model.py skips views, FREE_OPS and ops without tensor inputs the same way).
const std::set<std::string>& free_ops() {
  static const std::set<std::string> s{"view",
                                       "_unsafe_view",
                                       "_reshape_alias",
                                       "reshape",
                                       "flatten",
                                       "unflatten",
                                       "t",
                                       "transpose",
                                       "permute",
                                       "expand",
                                       "expand_as",
                                       "view_as",
                                       "squeeze",
                                       "unsqueeze",
                                       "slice",
                                       "select",
                                       "narrow",
                                       "split",
                                       "split_with_sizes",
                                       "chunk",
                                       "unbind",
                                       "as_strided",
                                       "alias",
                                       "detach",
                                       "detach_",
                                       "lift_fresh",
                                       "numpy_T",
                                       "empty",
                                       "empty_like",
                                       "empty_strided",
                                       "new_empty",
                                       "new_empty_strided",
                                       "resize_",
                                       "set_",
                                       "is_nonzero",
                                       "item",
                                       "_local_scalar_dense",
                                       "size",
                                       "stride",
                                       "sym_size",
                                       "sym_stride",
                                       "dim",
                                       "numel",
                                       "contiguous",
                                       "to",
                                       "type_as",
                                       "result_type",
                                       "_has_compatible_shallow_copy_type",
                                       "dropout",
                                       "feature_dropout",
                                       "alpha_dropout",
                                       "zeros",
                                       "ones",
                                       "full",
                                       "arange",
                                       "scalar_tensor",
                                       "_to_copy_noop"};
  return s;
}
// Free ops that compute when a nested op does (a reshape that copies, dropout in training mode).
const std::set<std::string>& pass_ops() {
  static const std::set<std::string> s{"reshape", "flatten", "contiguous",      "to",
                                       "type_as", "dropout", "feature_dropout", "alpha_dropout"};
  return s;
}

std::string op_base(const std::string& name) { return starts_with(name, "aten::") ? name.substr(6) : name; }

bool is_comm_op(const std::string& name) {
  std::string n = lower(name);
  return n.find("c10d::") != std::string::npos || n.find("nccl") != std::string::npos ||
         n.find("gloo") != std::string::npos || n.find("record_param_comms") != std::string::npos;
}

// The layer type a known torch class implies (scripts/export_model.py _layer_type); "" = any.
std::string known_type(const std::string& cls) {
  static const std::vector<std::pair<std::vector<std::string>, std::string>> t{
      {{"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"}, "conv2d"},
      {{"Linear", "Conv1D", "LazyLinear", "NonDynamicallyQuantizableLinear"}, "linear"},
      {{"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"}, "batchnorm"},
      {{"LayerNorm", "GroupNorm"}, "layernorm"},
      {{"Embedding", "EmbeddingBag"}, "embedding"},
      {{"MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"},
       "pool"},
      {{"Softmax", "LogSoftmax"}, "softmax"}};
  for (const auto& [classes, type] : t)
    if (std::find(classes.begin(), classes.end(), cls) != classes.end()) return type;
  return "";
}

bool is_wrapper(const std::string& cls) {
  return cls == "DistributedDataParallel" || cls == "DataParallel" || cls == "FullyShardedDataParallel";
}

std::string layer_base_name(const std::string& name) {
  auto pos = name.rfind('#');
  return pos == std::string::npos ? name : name.substr(0, pos);
}

struct ModelLayer {
  std::string name, type;
};

std::vector<ModelLayer> read_model(const Json& model, const std::string& model_file, int* batch_size) {
  Diagnostics d(model_file);
  std::vector<ModelLayer> out;
  if (!model.is_object()) {
    d.add_value("", model, "a ddpsim-model/1 object");
    d.throw_if_any();
  }
  auto bs = model.find("batch_size");
  if (bs == model.end())
    d.add("/batch_size", "missing; required: an integer >= 1");
  else if (!bs->is_number_integer() || bs->get<long long>() < 1)
    d.add_value("/batch_size", *bs, "an integer >= 1");
  else
    *batch_size = static_cast<int>(bs->get<long long>());
  auto layers = model.find("layers");
  if (layers == model.end())
    d.add("/layers", "missing; required: an array of layers in forward order");
  else if (!layers->is_array() || layers->empty())
    d.add_value("/layers", *layers, "a non-empty array of layers");
  else
    for (size_t i = 0; i < layers->size(); ++i) {
      const Json& l = (*layers)[i];
      std::string p = "/layers/" + std::to_string(i);
      ModelLayer ml;
      if (!l.is_object()) {
        d.add_value(p, l, "a layer object");
      } else {
        auto n = l.find("name");
        auto ty = l.find("type");
        if (n == l.end() || !n->is_string())
          d.add(p + "/name", "missing or not a string; required: the layer's module path");
        else
          ml.name = n->get<std::string>();
        if (ty == l.end() || !ty->is_string())
          d.add(p + "/type", "missing or not a string; required: the layer type");
        else
          ml.type = ty->get<std::string>();
      }
      out.push_back(ml);
    }
  d.throw_if_any();
  return out;
}

class Importer {
 public:
  Importer(const Json& trace, std::string trace_file, const Json& model, std::string model_file)
      : trace_(trace), trace_file_(std::move(trace_file)), model_(model), model_file_(std::move(model_file)) {}

  TraceImportResult run(std::optional<int> measured_batch_size) {
    int batch = 1;
    layers_ = read_model(model_, model_file_, &batch);
    read_events();
    nest();
    find_forwards();
    map_sequence_numbers();
    map_backward_nodes();
    choose_forward();
    TraceImportResult r;
    r.layers_total = static_cast<int>(layers_.size());
    time_layers(r);
    r.model = model_;
    Json& layers = r.model["layers"];
    int timed = 0;
    for (size_t i = 0; i < layers_.size(); ++i) {
      layers[i]["fwd_time_s"] = fwd_[i] * kUs;
      if (has_backward_) layers[i]["bwd_time_s"] = bwd_[i] * kUs;
      ++timed;
    }
    r.layers_timed = timed;
    r.model["measured_on"] = measured_on();
    int mb = measured_batch_size.value_or(batch);
    r.model["measured_batch_size"] = mb;
    check_batch(mb);
    for (auto& w : warnings_) r.warnings.push_back(std::move(w));
    return r;
  }

 private:
  // ---- reading -----------------------------------------------------------------------------
  void read_events() {
    Diagnostics d(trace_file_);
    if (trace_.is_array()) {
      d.add("", "a JSON array of " + std::to_string(trace_.size()) +
                    " events (the legacy torch.autograd.profiler export, which records no module calls, no "
                    "kernel correlation and no sequence numbers) is not allowed; expected a torch.profiler (Kineto) "
                    "trace, an object with \"traceEvents\": " +
                    kRecordHint);
      d.throw_if_any();
    }
    if (!trace_.is_object()) {
      d.add_value("", trace_, "a torch.profiler (Kineto) trace object with \"traceEvents\"");
      d.throw_if_any();
    }
    auto evs = trace_.find("traceEvents");
    if (evs == trace_.end()) {
      d.add("/traceEvents", "missing; required: the event array torch.profiler's export_chrome_trace writes (" +
                                std::string(kRecordHint) + ")");
      d.throw_if_any();
    }
    if (!evs->is_array()) {
      d.add_value("/traceEvents", *evs, "an array of trace events");
      d.throw_if_any();
    }
    for (size_t i = 0; i < evs->size(); ++i) read_event((*evs)[i], static_cast<int>(i), d);
    d.throw_if_any();
    if (modules_.empty()) {
      d.add("/traceEvents", "no \"nn.Module: ...\" events among " + std::to_string(evs->size()) +
                                " events; expected the module calls torch.profiler records with with_stack=True / "
                                "with_modules=True: " +
                                kRecordHint);
      d.throw_if_any();
    }
    has_gpu_ = !gpu_.empty();
    for (size_t i = 0; i < launches_.size(); ++i)
      if (auto c = int_arg(launch_args_[i], "correlation")) launch_by_corr_[*c] = static_cast<int>(i);
    for (size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i].external_id) op_by_ext_[*ops_[i].external_id] = static_cast<int>(i);
  }

  void read_event(const Json& e, int index, Diagnostics& d) {
    std::string p = "/traceEvents/" + std::to_string(index);
    if (!e.is_object()) {
      d.add_value(p, e, "a trace event object");
      return;
    }
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string>() != "X") return;
    std::string name, cat;
    if (auto n = e.find("name"); n != e.end() && n->is_string()) name = n->get<std::string>();
    if (auto c = e.find("cat"); c != e.end() && c->is_string()) cat = lower(c->get<std::string>());
    enum { NONE, MODULE, OP, LAUNCH, GPU } kind = NONE;
    if (starts_with(name, kModulePrefix))
      kind = MODULE;
    else if (cat == "cpu_op" || cat == "operator")
      kind = OP;
    else if (ends_with(cat, "_runtime") || ends_with(cat, "_driver"))
      kind = LAUNCH;
    else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")
      kind = GPU;
    if (kind == NONE) return;
    Span s;
    s.index = index;
    bool ok = true;
    for (const char* key : {"ts", "dur"}) {
      auto it = e.find(key);
      // Bounded so that ts + dur stays finite (1e18 us is 30,000 years).
      if (it == e.end() || !it->is_number() || !(std::fabs(it->get<double>()) <= 1e18) ||
          (std::string(key) == "dur" && it->get<double>() < 0)) {
        if (it == e.end())
          d.add(p + "/" + key, std::string("missing; required: a number of microseconds") +
                                   (std::string(key) == "dur" ? " >= 0" : ""));
        else
          d.add_value(p + "/" + key, *it,
                      std::string("a number of microseconds") + (std::string(key) == "dur" ? " >= 0" : "") +
                          ", of magnitude <= 1e+18");
        ok = false;
      }
    }
    if (!ok) return;
    s.start = e["ts"].get<double>();
    s.end = s.start + e["dur"].get<double>();
    std::string pid = e.contains("pid") ? id_text(e["pid"]) : "";
    s.thread = pid + "/" + (e.contains("tid") ? id_text(e["tid"]) : "");
    const Json* args = nullptr;
    if (auto a = e.find("args"); a != e.end() && a->is_object()) args = &*a;
    switch (kind) {
      case MODULE: {
        ModuleCall m;
        m.span = s;
        m.instance = name.substr(std::string(kModulePrefix).size());
        auto us = m.instance.rfind('_');
        bool numbered = us != std::string::npos && us + 1 < m.instance.size() &&
                        std::all_of(m.instance.begin() + us + 1, m.instance.end(), ::isdigit);
        m.cls = numbered ? m.instance.substr(0, us) : m.instance;
        modules_.push_back(std::move(m));
        break;
      }
      case OP: {
        CpuOp o;
        o.span = s;
        o.name = name;
        o.args = args;
        o.seq = int_arg(args, "Sequence number");
        o.external_id = int_arg(args, "External id");
        o.comm = is_comm_op(name);
        ops_.push_back(std::move(o));
        break;
      }
      case LAUNCH:
        launches_.push_back(s);
        launch_args_.push_back(args);
        break;
      case GPU: {
        GpuEvent g;
        g.span = s;
        g.name = name;
        g.pid = pid;
        g.correlation = int_arg(args, "correlation");
        g.external_id = int_arg(args, "External id");
        gpu_.push_back(std::move(g));
        break;
      }
      case NONE: break;
    }
  }

  // ---- structure ---------------------------------------------------------------------------
  void nest() {
    std::vector<Span> ms;
    for (const auto& m : modules_) ms.push_back(m.span);
    module_spans_ = ms;
    module_nest_.build(module_spans_);
    for (size_t i = 0; i < modules_.size(); ++i) {
      modules_[i].parent = module_nest_.parent(static_cast<int>(i));
      if (modules_[i].parent >= 0) modules_[modules_[i].parent].children.push_back(static_cast<int>(i));
    }
    for (const auto& o : ops_) op_spans_.push_back(o.span);
    op_nest_.build(op_spans_);
    for (size_t i = 0; i < ops_.size(); ++i) {
      ops_[i].parent = op_nest_.parent(static_cast<int>(i));
      if (ops_[i].parent >= 0) ops_[ops_[i].parent].children.push_back(static_cast<int>(i));
      ops_[i].module = module_nest_.innermost(ops_[i].span.thread, ops_[i].span.start);
    }
    // Own computing ops: outermost within their module call, not a free op (or a pass-through
    // op with a computing nested op).
    std::vector<signed char> memo(ops_.size(), -1);
    for (size_t i = 0; i < ops_.size(); ++i) {
      const CpuOp& o = ops_[i];
      if (o.module < 0) continue;
      if (o.parent >= 0 && ops_[o.parent].module == o.module) continue;
      if (!computes(static_cast<int>(i), memo)) continue;
      ModuleCall& m = modules_[o.module];
      m.computes = true;
      m.first_op = std::min(m.first_op, o.span.start);
      if (m.first_op == o.span.start) first_op_of_.insert_or_assign(o.module, static_cast<int>(i));
    }
  }

  bool computes(int i, std::vector<signed char>& memo) const {
    if (memo[i] >= 0) return memo[i] != 0;
    std::string b = op_base(ops_[i].name);
    bool r;
    if (!free_ops().count(b))
      r = true;
    else if (pass_ops().count(b)) {
      r = false;
      for (int c : ops_[i].children)
        if (computes(c, memo)) r = true;
    } else
      r = false;
    memo[i] = r ? 1 : 0;
    return r;
  }

  void collect_layer_calls(int call, std::vector<int>& out) const {
    if (modules_[call].computes) out.push_back(call);
    for (int c : modules_[call].children) collect_layer_calls(c, out);
  }

  void find_forwards() {
    std::vector<int> roots;
    for (size_t i = 0; i < modules_.size(); ++i)
      if (modules_[i].parent < 0) roots.push_back(static_cast<int>(i));
    std::sort(roots.begin(), roots.end(),
              [&](int a, int b) { return modules_[a].span.start < modules_[b].span.start; });
    for (int r : roots) {
      int call = r;
      while (is_wrapper(modules_[call].cls) && modules_[call].children.size() == 1) call = modules_[call].children[0];
      Forward f;
      f.call = call;
      collect_layer_calls(call, f.layers);
      std::stable_sort(f.layers.begin(), f.layers.end(),
                       [&](int a, int b) { return modules_[a].first_op < modules_[b].first_op; });
      if (f.layers.empty()) continue;
      all_forwards_.push_back(f);
    }
    Diagnostics d(trace_file_);
    std::vector<std::string> conflicts;
    for (size_t fi = 0; fi < all_forwards_.size(); ++fi) {
      const Forward& f = all_forwards_[fi];
      if (f.layers.size() != layers_.size()) continue;
      std::vector<std::string> c;
      for (size_t j = 0; j < f.layers.size(); ++j) {
        const ModuleCall& m = modules_[f.layers[j]];
        std::string kt = known_type(m.cls);
        if (!kt.empty() && kt != layers_[j].type)
          c.push_back("/traceEvents/" + std::to_string(m.span.index) + ": \"nn.Module: " + m.instance +
                      "\" is not allowed for layer " + std::to_string(j) + " \"" + layers_[j].name + "\" (type " +
                      layers_[j].type + "); expected a " + kt + " layer there");
      }
      if (!c.empty()) {
        if (conflicts.empty()) conflicts = c;
        continue;
      }
      candidates_.push_back(static_cast<int>(fi));
      for (size_t j = 0; j < f.layers.size(); ++j) {
        modules_[f.layers[j]].forward = static_cast<int>(fi);
        modules_[f.layers[j]].slot = static_cast<int>(j);
      }
    }
    if (!candidates_.empty()) return;
    if (!conflicts.empty()) {
      size_t n = std::min<size_t>(conflicts.size(), 5);
      std::string more =
          conflicts.size() > n ? " (and " + std::to_string(conflicts.size() - n) + " more type conflicts)" : "";
      // Each problem already names its event ("file: /traceEvents/N: ...").
      std::vector<std::string> problems;
      for (size_t i = 0; i < n; ++i)
        problems.push_back(trace_file_ + ": " + conflicts[i] + (i + 1 == n ? more : "") +
                           " (the trace's layer calls do not line up with " + model_file_ +
                           "; profile the same model the file was exported from)");
      throw ConfigError(problems);
    }
    std::string counts;
    std::set<size_t> seen;
    for (const auto& f : all_forwards_) {
      if (seen.count(f.layers.size())) continue;
      seen.insert(f.layers.size());
      if (seen.size() > 4) {
        counts += ", ...";
        break;
      }
      const ModuleCall& m = modules_[f.call];
      counts += std::string(counts.empty() ? "" : ", ") + std::to_string(f.layers.size()) +
                " in \"nn.Module: " + m.instance + "\" (/traceEvents/" + std::to_string(m.span.index) + ")";
    }
    d.add("/traceEvents", "the trace's top-level module calls have " + (counts.empty() ? "no" : counts) +
                              " module calls that run ops; " + model_file_ + " has " + std::to_string(layers_.size()) +
                              " layers; expected a trace of the same model (same code and input as its export), "
                              "with every module call recorded: " +
                              kRecordHint);
    d.throw_if_any();
  }

  // The layer slot of forward `fi` charged with CPU instant t on `thread`: the innermost layer call
  // running then; else (a container's view op) the next layer to run, or the last one.
  int layer_at(int fi, const std::string& thread, double t) const {
    const Forward& f = all_forwards_[fi];
    const Span& fs = modules_[f.call].span;
    if (thread != fs.thread || t < fs.start || t > fs.end) return -1;
    for (int c = module_nest_.innermost(thread, t); c != -1; c = modules_[c].parent) {
      if (modules_[c].forward == fi) return modules_[c].slot;
      if (c == f.call) break;
    }
    for (size_t j = 0; j < f.layers.size(); ++j)
      if (modules_[f.layers[j]].first_op >= t) return static_cast<int>(j);
    return static_cast<int>(f.layers.size()) - 1;
  }

  int forward_at(const std::string& thread, double t) const {
    for (int fi : candidates_) {
      const Span& fs = modules_[all_forwards_[fi].call].span;
      if (thread == fs.thread && t >= fs.start && t <= fs.end) return fi;
    }
    return -1;
  }

  // Sequence number -> (forward, layer slot) of the last forward op that recorded it.
  void map_sequence_numbers() {
    std::unordered_map<long long, double> last_start;
    for (const auto& o : ops_) {
      if (!o.seq) continue;
      int fi = forward_at(o.span.thread, o.span.start);
      if (fi < 0) continue;
      auto it = last_start.find(*o.seq);
      if (it != last_start.end() && it->second > o.span.start) continue;
      last_start[*o.seq] = o.span.start;
      seq_owner_[*o.seq] = {fi, layer_at(fi, o.span.thread, o.span.start)};
    }
  }

  // Backward nodes: outermost evaluate_function ops, in time order per thread.
  void map_backward_nodes() {
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (!starts_with(ops_[i].name, kEvalPrefix)) continue;
      bool nested = false;
      for (int p = ops_[i].parent; p != -1; p = ops_[p].parent)
        if (starts_with(ops_[p].name, kEvalPrefix)) nested = true;
      if (!nested) nodes_.push_back(static_cast<int>(i));
    }
    std::sort(nodes_.begin(), nodes_.end(), [&](int a, int b) {
      if (ops_[a].span.thread != ops_[b].span.thread) return ops_[a].span.thread < ops_[b].span.thread;
      return ops_[a].span.start < ops_[b].span.start;
    });
    node_owner_.assign(nodes_.size(), {-1, -1});
    std::string prev_thread;
    std::pair<int, int> prev{-1, -1};
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const CpuOp& e = ops_[nodes_[k]];
      if (e.span.thread != prev_thread) prev = {-1, -1};
      prev_thread = e.span.thread;
      std::string node = e.name.substr(std::string(kEvalPrefix).size());
      std::optional<long long> seq;
      for (int c : e.children)
        if (ops_[c].name == node && ops_[c].seq) seq = ops_[c].seq;
      if (!seq) seq = e.seq;
      std::pair<int, int> owner{-1, -1};
      if (seq) {
        auto it = seq_owner_.find(*seq);
        if (it != seq_owner_.end()) owner = it->second;
      } else if (node.find("AccumulateGrad") != std::string::npos) {
        owner = prev;
        if (owner.first < 0) accumulate_unowned_.push_back(static_cast<int>(k));
      }
      node_owner_[k] = owner;
      prev = owner;
      if (owner.first >= 0) fwd_has_backward_.insert(owner.first);
    }
    node_span_list_.clear();
    for (int n : nodes_) node_span_list_.push_back(ops_[n].span);
    node_nest_.build(node_span_list_);
  }

  void choose_forward() {
    chosen_ = -1;
    for (int fi : candidates_)
      if (fwd_has_backward_.count(fi)) chosen_ = fi;
    has_backward_ = chosen_ >= 0;
    if (chosen_ < 0) {
      chosen_ = candidates_.back();
      warnings_.push_back(trace_file_ +
                          ": no backward pass (autograd::engine::evaluate_function events with sequence numbers of "
                          "the forward's ops) found; only fwd_time_s is set");
    }
    if (candidates_.size() > 1) {
      int pos = static_cast<int>(std::find(candidates_.begin(), candidates_.end(), chosen_) - candidates_.begin());
      warnings_.push_back(trace_file_ + ": the trace holds " + std::to_string(candidates_.size()) +
                          " forward passes of the model; times are from pass " + std::to_string(pos + 1) +
                          " (the last one with a backward)");
    }
  }

  // The CPU instant and thread that launched a GPU event.
  std::optional<std::pair<std::string, double>> launch_point(const GpuEvent& g) const {
    if (g.correlation) {
      auto it = launch_by_corr_.find(*g.correlation);
      if (it != launch_by_corr_.end()) return std::make_pair(launches_[it->second].thread, launches_[it->second].start);
    }
    if (g.external_id) {
      auto it = op_by_ext_.find(*g.external_id);
      if (it != op_by_ext_.end()) return std::make_pair(ops_[it->second].span.thread, ops_[it->second].span.start);
    }
    return std::nullopt;
  }

  // ---- timing ------------------------------------------------------------------------------
  void time_layers(TraceImportResult& r) {
    const size_t n = layers_.size();
    fwd_.assign(n, 0);
    bwd_.assign(n, 0);
    std::vector<int> fwd_events(n, 0), bwd_nodes(n, 0);
    const Forward& f = all_forwards_[chosen_];
    double f_lo = std::numeric_limits<double>::infinity(), f_hi = -f_lo, b_lo = f_lo, b_hi = -f_lo;
    double unattributed_bwd = 0;
    int unattributed_nodes = 0, comm_kernels = 0;
    std::vector<double> node_time(nodes_.size(), 0);
    if (has_gpu_) {
      for (const auto& g : gpu_) {
        auto lp = launch_point(g);
        if (!lp) continue;
        if (starts_with(lower(g.name), "nccl")) {
          int k = node_nest_.innermost(lp->first, lp->second);
          if (layer_at(chosen_, lp->first, lp->second) >= 0 || (k >= 0 && node_owner_[k].first == chosen_))
            ++comm_kernels;
          continue;
        }
        double dur = g.span.end - g.span.start;
        int slot = layer_at(chosen_, lp->first, lp->second);
        if (slot >= 0) {
          fwd_[slot] += dur;
          ++fwd_events[slot];
          f_lo = std::min(f_lo, g.span.start), f_hi = std::max(f_hi, g.span.end);
          if (device_pid_.empty()) device_pid_ = g.pid;
          continue;
        }
        int k = node_nest_.innermost(lp->first, lp->second);
        if (k < 0) continue;
        node_time[k] += dur;
        if (node_owner_[k].first == chosen_) {
          b_lo = std::min(b_lo, g.span.start), b_hi = std::max(b_hi, g.span.end);
          if (device_pid_.empty()) device_pid_ = g.pid;
        }
      }
      r.trace_forward_s = f_hi > f_lo ? (f_hi - f_lo) * kUs : 0;
    } else {
      for (size_t i = 0; i < ops_.size(); ++i) {
        const CpuOp& o = ops_[i];
        if (o.comm) continue;
        int slot = layer_at(chosen_, o.span.thread, o.span.start);
        if (slot < 0) continue;
        double self = o.span.end - o.span.start;
        for (int c : o.children) self -= ops_[c].span.end - ops_[c].span.start;
        fwd_[slot] += std::max(0.0, self);
        ++fwd_events[slot];
      }
      const Span& fs = modules_[f.call].span;
      r.trace_forward_s = (fs.end - fs.start) * kUs;
      for (size_t k = 0; k < nodes_.size(); ++k) {
        const CpuOp& e = ops_[nodes_[k]];
        double t = e.span.end - e.span.start;
        subtract_comm(nodes_[k], t);
        node_time[k] = std::max(0.0, t);
        if (node_owner_[k].first == chosen_) b_lo = std::min(b_lo, e.span.start), b_hi = std::max(b_hi, e.span.end);
      }
    }
    for (size_t k = 0; k < nodes_.size(); ++k) {
      auto [fi, slot] = node_owner_[k];
      if (fi == chosen_ && slot >= 0) {
        bwd_[slot] += node_time[k];
        ++bwd_nodes[slot];
      } else if (fi < 0 && nodes_in_chosen_backward(k)) {
        unattributed_bwd += node_time[k];
        ++unattributed_nodes;
      }
    }
    if (has_backward_) r.trace_backward_s = b_hi > b_lo ? (b_hi - b_lo) * kUs : 0;

    // Warnings.
    auto list = [&](const std::vector<size_t>& idx) {
      std::string s;
      for (size_t i = 0; i < idx.size() && i < 5; ++i) s += std::string(i ? ", " : "") + layers_[idx[i]].name;
      if (idx.size() > 5) s += ", ...";
      return s;
    };
    std::vector<size_t> no_fwd, no_bwd;
    for (size_t i = 0; i < n; ++i) {
      if (fwd_events[i] == 0) no_fwd.push_back(i);
      if (bwd_nodes[i] == 0) no_bwd.push_back(i);
    }
    if (!no_fwd.empty())
      warnings_.push_back(model_file_ + ": " + std::to_string(no_fwd.size()) + " layer(s) had no " +
                          (has_gpu_ ? "GPU kernels" : "cpu_ops") + " in the forward (fwd_time_s = 0): " + list(no_fwd));
    if (has_backward_ && !no_bwd.empty())
      warnings_.push_back(model_file_ + ": " + std::to_string(no_bwd.size()) +
                          " layer(s) had no backward node in the trace (bwd_time_s = 0): " + list(no_bwd));
    size_t acc_ignored = 0;
    for (int k : accumulate_unowned_)
      if (nodes_in_chosen_backward(k)) ++acc_ignored;
    if (acc_ignored)
      warnings_.push_back(trace_file_ + ": " + std::to_string(acc_ignored) +
                          " AccumulateGrad node(s) could not be tied to a layer (no preceding node of the model) and "
                          "were ignored");
    if (unattributed_nodes)
      warnings_.push_back(trace_file_ + ": " + std::to_string(unattributed_nodes) + " backward node(s) (" +
                          fmt_ms(unattributed_bwd * kUs) +
                          ") belong to no layer of the model (the loss, or ops outside the model) and were not "
                          "counted");
    if (comm_kernels)
      warnings_.push_back(trace_file_ + ": " + std::to_string(comm_kernels) +
                          " NCCL kernel(s) were left out (communication is simulated, not measured)");
    check_instances();
    (void)f;
  }

  // Is backward node k (by time, on its thread) between the chosen backward's first and last node?
  bool nodes_in_chosen_backward(size_t k) const {
    if (!chosen_range_) {
      double lo = std::numeric_limits<double>::infinity(), hi = -lo;
      std::string thread;
      for (size_t j = 0; j < nodes_.size(); ++j)
        if (node_owner_[j].first == chosen_) {
          lo = std::min(lo, ops_[nodes_[j]].span.start), hi = std::max(hi, ops_[nodes_[j]].span.end);
          thread = ops_[nodes_[j]].span.thread;
        }
      chosen_range_ = std::make_tuple(thread, lo, hi);
    }
    const auto& [thread, lo, hi] = *chosen_range_;
    const Span& s = ops_[nodes_[k]].span;
    // The loss's nodes run first in backward: include the gap from the forward's end.
    double from = std::min(lo, modules_[all_forwards_[chosen_].call].span.end);
    return s.thread == thread && s.start >= from && s.end <= hi;
  }

  void subtract_comm(int op, double& t) const {
    for (int c : ops_[op].children) {
      if (ops_[c].comm)
        t -= ops_[c].span.end - ops_[c].span.start;
      else
        subtract_comm(c, t);
    }
  }

  // Calls of one module ("relu", "relu#1") should be one trace instance, and different modules
  // different instances; a violation hints at a misalignment the type check cannot see.
  void check_instances() {
    const Forward& f = all_forwards_[chosen_];
    std::map<std::string, std::string> by_name, by_instance;
    std::vector<std::string> bad;
    for (size_t j = 0; j < f.layers.size(); ++j) {
      std::string base = layer_base_name(layers_[j].name);
      const std::string& inst = modules_[f.layers[j]].instance;
      auto a = by_name.emplace(base, inst);
      auto b = by_instance.emplace(inst, base);
      if ((!a.second && a.first->second != inst) || (!b.second && b.first->second != base))
        bad.push_back("layer " + std::to_string(j) + " \"" + layers_[j].name + "\" is \"nn.Module: " + inst + "\"");
    }
    if (!bad.empty()) {
      std::string s;
      for (size_t i = 0; i < bad.size() && i < 3; ++i) s += std::string(i ? "; " : "") + bad[i];
      warnings_.push_back(trace_file_ + ": " + std::to_string(bad.size()) +
                          " layer(s) do not map module-for-module onto the trace's module instances (" + s +
                          "); check that the trace is of the same model");
    }
  }

  std::string measured_on() const {
    if (has_gpu_) {
      auto dp = trace_.find("deviceProperties");
      if (dp != trace_.end() && dp->is_array()) {
        const Json* first = nullptr;
        for (const auto& d : *dp) {
          if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) continue;
          if (!first) first = &d;
          if (d.contains("id") && id_text(d["id"]) == device_pid_) return d["name"].get<std::string>();
        }
        if (first) return (*first)["name"].get<std::string>();
      }
    }
    return "torch.profiler trace " + trace_file_;
  }

  void check_batch(int batch) {
    const Forward& f = all_forwards_[chosen_];
    auto it = first_op_of_.find(f.layers.front());
    if (it == first_op_of_.end()) return;
    const Json* args = ops_[it->second].args;
    if (!args || !args->contains("Input Dims")) return;
    const Json& dims = (*args)["Input Dims"];
    if (!dims.is_array() || dims.empty() || !dims[0].is_array() || dims[0].empty() || !dims[0][0].is_number_integer())
      return;
    long long b = dims[0][0].get<long long>();
    if (b != batch)
      warnings_.push_back(trace_file_ + ": /traceEvents/" + std::to_string(ops_[it->second].span.index) +
                          "/args/Input Dims: the first layer's input has batch dimension " + std::to_string(b) +
                          " but measured_batch_size is " + std::to_string(batch) +
                          "; give the batch the trace was recorded at");
  }

  const Json& trace_;
  std::string trace_file_;
  const Json& model_;
  std::string model_file_;
  std::vector<ModelLayer> layers_;

  std::vector<ModuleCall> modules_;
  std::vector<CpuOp> ops_;
  std::vector<Span> launches_;
  std::vector<const Json*> launch_args_;
  std::vector<GpuEvent> gpu_;
  bool has_gpu_ = false;
  std::unordered_map<long long, int> launch_by_corr_, op_by_ext_;
  std::map<int, int> first_op_of_;  // module call -> its first own computing op

  std::vector<Span> module_spans_, op_spans_, node_span_list_;
  Nesting module_nest_, op_nest_, node_nest_;

  std::vector<Forward> all_forwards_;
  std::vector<int> candidates_;
  std::unordered_map<long long, std::pair<int, int>> seq_owner_;
  std::vector<int> nodes_;
  std::vector<std::pair<int, int>> node_owner_;
  std::vector<int> accumulate_unowned_;
  std::set<int> fwd_has_backward_;
  int chosen_ = -1;
  bool has_backward_ = false;
  mutable std::optional<std::tuple<std::string, double, double>> chosen_range_;
  std::string device_pid_;

  std::vector<double> fwd_, bwd_;
  std::vector<std::string> warnings_;
};

}  // namespace

TraceImportResult import_trace(const Json& trace, const std::string& trace_file, const Json& model,
                               const std::string& model_file, std::optional<int> measured_batch_size) {
  if (measured_batch_size && *measured_batch_size < 1)
    throw ConfigError(trace_file + ": measured batch size " + std::to_string(*measured_batch_size) +
                      " is not allowed; expected an integer >= 1");
  return Importer(trace, trace_file, model, model_file).run(measured_batch_size);
}

Json read_trace_file(const std::string& file) {
  const std::string text = core::read_text_file(file);  // regular files only, size-limited
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b)
    throw ConfigError(file +
                      ": gzip-compressed data is not allowed; expected the JSON trace itself (decompress it first: "
                      "gunzip -k " +
                      file + ")");
  return core::parse_json_text(text, file);
}

}  // namespace ddpsim::profile
