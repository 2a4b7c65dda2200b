#include "plan/dp_builder.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/units.hpp"
#include "gpu/kernel_model.hpp"

namespace ddpsim::plan {

std::vector<std::vector<int>> take_tensors_cpp(const std::vector<double>& bytes, const std::vector<int>& type,
                                               double limit) {
  std::vector<std::vector<int>> out;
  std::map<int, std::pair<std::vector<int>, double>> groups;
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto& g = groups[type[i]];
    g.first.push_back(static_cast<int>(i));
    g.second += bytes[i];
    if (g.second >= limit) {
      out.push_back(std::move(g.first));
      g = {};
    }
  }
  for (auto& [t, g] : groups)
    if (!g.first.empty()) out.push_back(std::move(g.first));
  return out;
}

std::vector<std::vector<int>> take_tensors_py(const std::vector<double>& bytes, const std::vector<int>& type,
                                              double limit) {
  std::vector<std::vector<int>> out;
  std::vector<int> order;  // dict insertion order of the types
  std::map<int, std::pair<std::vector<int>, double>> groups;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!groups.count(type[i])) order.push_back(type[i]);
    auto& g = groups[type[i]];
    if (g.second + bytes[i] > limit && g.second > 0) {
      out.push_back(std::move(g.first));
      g = {};
    }
    g.first.push_back(static_cast<int>(i));
    g.second += bytes[i];
  }
  for (int t : order)
    if (!groups[t].first.empty()) out.push_back(std::move(groups[t].first));
  return out;
}

double dp_output_bytes_per_sample(const config::Scenario& sc) {
  if (sc.training.data_parallel.output_bytes_per_sample) return *sc.training.data_parallel.output_bytes_per_sample;
  const auto& m = sc.model;
  const bool half = config::is_half_precision(sc.training.compute_dtype);
  if (!m.layers.empty() && !m.layers.back().kernels.empty()) {
    const auto& k = m.layers.back().kernels.back();
    double bytes = 0;
    switch (k.op) {
      case config::KernelRecord::Op::GEMM:
        bytes = k.batch * k.m * k.n * config::dtype_size(config::DType::FLOAT32) * (half ? 0.5 : 1.0);
        break;
      case config::KernelRecord::Op::CONV:
        bytes = k.n * k.o * k.p * k.q * config::dtype_size(config::DType::FLOAT32) * (half ? 0.5 : 1.0);
        break;
      case config::KernelRecord::Op::MEM: bytes = k.out[0] + k.out[1] + k.out[2]; break;
    }
    if (bytes > 0) return bytes / std::max(1, m.batch_size);
  }
  throw core::ConfigError(sc.file + ": /training/data_parallel/output_bytes_per_sample: model " + m.name +
                          " has no kernel record for its last layer, so the output Gather copies to GPU 0 is "
                          "unknown; expected the bytes of one sample's output (e.g. \"4000B\")");
}

DpInputs dp_inputs(const config::Scenario& sc, const gpu::ComputeProfile& profile) {
  DpInputs in;
  const int g = sc.cluster.gpus_per_node;
  in.op_s = gpu::eager_host_cost().forward_op_s();
  in.input_bytes = gpu::input_bytes_per_sample(sc) * sc.training.batch_size * g;
  in.output_bytes = g > 1 ? dp_output_bytes_per_sample(sc) * sc.training.batch_size * g : 0.0;
  in.input_on_cpu = sc.training.data_parallel.input_device == "cpu" && g > 1;
  // The user's input.to("cuda:0"): the whole batch over GPU 0's host link.
  // A peer copy (cudaMemcpyAsync between two GPUs) takes the links between the pair: all of the
  // GPU's links through an NVSwitch or its PCIe link, at most peer_links of them in an NVLink mesh
  // (DGX-1 V100 hybrid cube mesh: at most 2 between a pair, configs/clusters).
  const auto& c = sc.cluster;
  const double port = c.intra_bandwidth();
  in.peer_bandwidth = (c.fabric == config::IntraFabric::NVLINK_MESH && c.peer_links > 0)
                          ? std::min(port, c.intra_link.bandwidth * c.peer_links)
                          : port;
  in.h2d_s = profile.h2d.seconds <= 0 ? 0.0
             : in.input_on_cpu        ? profile.h2d.seconds
                                      : profile.h2d.shape.memory_s * g + profile.h2d.shape.overhead_s;
  return in;
}

report::DataParallelReport dp_report_facts(const config::Scenario& sc, const DpInputs& in) {
  report::DataParallelReport d;
  const auto& m = sc.model;
  const int g = sc.cluster.gpus_per_node;
  for (const auto& p : m.params) {
    d.param_bytes += p.bytes();
    if (p.requires_grad) d.grad_bytes += p.bytes();
  }
  for (const auto& b : m.buffers) d.buffer_bytes += static_cast<double>(b.numel) * config::dtype_size(b.dtype);
  d.input_bytes = in.input_bytes;
  d.output_bytes = in.output_bytes;
  d.nccl = sc.training.data_parallel.nccl;
  d.gil_share = sc.training.data_parallel.gil_share;
  if (g > 1) {
    // One call per coalesced chunk (comm.py), as the builder issues them.
    std::vector<double> pb, bb, gb;
    std::vector<int> pt, bt, gt;
    for (const auto& p : m.params) {
      pb.push_back(p.bytes());
      pt.push_back(static_cast<int>(p.dtype));
      if (p.requires_grad) {
        gb.push_back(p.bytes());
        gt.push_back(static_cast<int>(p.dtype));
      }
    }
    for (const auto& b : m.buffers) {
      bb.push_back(static_cast<double>(b.numel) * config::dtype_size(b.dtype));
      bt.push_back(static_cast<int>(b.dtype));
    }
    d.broadcast_calls = static_cast<int>(take_tensors_cpp(pb, pt, dp_costs::kCoalesceBytes).size() +
                                         take_tensors_cpp(bb, bt, dp_costs::kCoalesceBytes).size());
    d.reduce_calls = static_cast<int>(take_tensors_py(gb, gt, dp_costs::kCoalesceBytes).size());
  }
  for (int i = 0; i < g; ++i) {
    report::DataParallelGpu r;
    r.gpu = i;
    r.port_bandwidth = sc.cluster.intra_bandwidth();
    // The user's input.to("cuda:0") (all of it over GPU 0's host link), or each chunk to its GPU.
    if (in.input_on_cpu)
      r.host_link_bytes = in.input_bytes / g;
    else if (i == 0)
      r.host_link_bytes = in.input_bytes;
    d.gpus.push_back(r);
  }
  return d;
}

namespace {

using namespace dp_costs;

class DpBuilder {
 public:
  DpBuilder(const config::Scenario& sc, const gpu::ComputeProfile& profile, const DpInputs& in)
      : sc_(sc), profile_(profile), in_(in), g_(sc.cluster.gpus_per_node) {
    cursor_.assign(static_cast<size_t>(3 * g_ + 1), -1);
    start_after_.assign(cursor_.size(), -1);
  }

  Plan build() {
    p_.world_size = g_;
    p_.ranks = 1;
    p_.factor = {{1.0}};
    p_.report_iteration = {1};
    p_.first_steady_report = 0;
    p_.phases = {"scatter", "replicate", "forward", "gather", "backward", "reduce", "optimizer"};
    MicroStep st;
    p_.steps.push_back(st);
    p_.process_gpus = g_;
    p_.peer_bandwidth = in_.peer_bandwidth;
    // Trace tracks: the Python process (pid 0: its main thread, a parallel_apply and an autograd
    // device thread per GPU, the step's phases), then one process per GPU (its current stream).
    const std::string host = "python process (torch.nn.DataParallel)";
    p_.tracks.push_back({0, 0, host, "main thread"});
    for (int i = 0; i < g_; ++i) {
      p_.tracks.push_back({0, 1 + 2 * i, host, "parallel_apply thread " + std::to_string(i)});
      p_.tracks.push_back({0, 2 + 2 * i, host, "autograd device thread " + std::to_string(i)});
    }
    p_.phase_track = static_cast<int>(p_.tracks.size());
    p_.tracks.push_back({0, 1 + 2 * g_, host, "step phases"});
    for (int i = 0; i < g_; ++i)
      p_.tracks.push_back({1 + i, 0, "GPU " + std::to_string(i) + " (" + sc_.cluster.gpu.name + ")", "current stream"});
    p_.streams.push_back({StreamKind::HOST, "main thread", -1, 0, 0});
    for (int i = 0; i < g_; ++i) {
      p_.streams.push_back({StreamKind::HOST, "parallel_apply thread " + std::to_string(i), -1, i, 1 + 2 * i});
      p_.streams.push_back({StreamKind::HOST, "autograd device thread " + std::to_string(i), -1, i, 2 + 2 * i});
      p_.streams.push_back({StreamKind::COMPUTE, "GPU " + std::to_string(i), -1, i, 2 + 2 * g_ + i});
    }
    main_thread();
    return std::move(p_);
  }

 private:
  int add(Task t) {
    // A thread's first task follows the main thread's task that started it.
    int& start = start_after_[static_cast<size_t>(t.stream)];
    if (start >= 0) t.after.push_back(start);
    start = -1;
    const int i = p_.add(std::move(t));
    cursor_[static_cast<size_t>(p_.tasks[static_cast<size_t>(i)].stream)] = i;
    return i;
  }
  std::vector<int> pushed_after(int host) const {
    const int c = cursor_[static_cast<size_t>(host)];
    return c < 0 ? std::vector<int>{} : std::vector<int>{c};
  }

  static Task task(TaskKind kind, int stream, std::string name, std::string category) {
    Task t;
    t.kind = kind;
    t.stream = stream;
    t.name = std::move(name);
    t.category = std::move(category);
    return t;
  }

  // Host work on `host`; `locked`: its share under the GIL. Nothing when it costs nothing.
  void host_work(int host, double seconds, double locked, std::string name, std::string category) {
    if (seconds <= 0) return;
    Task t = task(TaskKind::HOST, host, std::move(name), std::move(category));
    t.seconds = seconds;
    t.locked = locked;
    t.scaled = false;
    add(std::move(t));
  }
  // Python on the main thread: it holds the GIL throughout.
  void python(double seconds, std::string what) {
    host_work(dp_main_stream(), seconds, 1.0, std::move(what), "python");
  }

  void mark(int host, Mark m, int phase, std::string name = "", std::string category = "") {
    Task t = task(TaskKind::MARK, host, std::move(name), std::move(category));
    t.mark = m;
    t.phase = phase;
    add(std::move(t));
  }

  // A kernel `host` pushes on GPU `gpu`'s stream.
  int push_kernel(int host, int gpu, double seconds, std::string name, int phase, Slot slot = Slot::NONE,
                  std::string category = "") {
    Task t;
    t.kind = TaskKind::KERNEL;
    t.stream = dp_gpu_stream(gpu);
    t.kernel.seconds = seconds;
    t.scaled = false;
    t.name = std::move(name);
    t.category = category.empty() ? p_.phases[static_cast<size_t>(phase)] : std::move(category);
    t.phase = phase;
    t.slot = slot;
    t.after = pushed_after(host);
    return add(std::move(t));
  }

  // A peer copy src -> dst (Copy.cu: on src's stream, after dst's stream reaches it; dst's stream
  // waits for it to finish).
  void peer_copy(int src, int dst, double bytes, int phase) {
    if (bytes <= 0 || src == dst) return;
    Task t;
    t.kind = TaskKind::COLLECTIVE;
    t.stream = dp_gpu_stream(src);
    t.joined = {dp_gpu_stream(dst)};
    CommOp o;
    o.kind = OpKind::PEER_COPY;
    o.bytes = bytes;
    o.src = src;
    o.dst = dst;
    t.chain = {o};
    t.name = "peer copy " + std::to_string(src) + " -> " + std::to_string(dst) + " (" + core::format_bytes(bytes) + ")";
    t.category = "copy";
    t.phase = phase;
    t.scaled = false;
    t.after = pushed_after(dp_main_stream());
    add(std::move(t));
  }

  // An NCCL broadcast from GPU 0 or reduce to GPU 0 of `bytes` over all G GPUs: ncclBcast /
  // ncclReduce on every device's current stream.
  void nccl_call(bool reduce, double bytes, int phase) {
    Task t;
    t.kind = TaskKind::COLLECTIVE;
    t.stream = dp_gpu_stream(0);
    for (int i = 1; i < g_; ++i) t.joined.push_back(dp_gpu_stream(i));
    CommOp o;
    o.kind = reduce ? OpKind::REDUCE : OpKind::BROADCAST;
    o.bytes = bytes;
    t.chain = {o};
    t.name = std::string(reduce ? "ncclReduce to GPU 0 (" : "ncclBcast from GPU 0 (") + core::format_bytes(bytes) + ")";
    t.category = "nccl";
    t.phase = phase;
    t.scaled = false;
    t.after = pushed_after(dp_main_stream());
    add(std::move(t));
  }

  double copy_kernel(double bytes) const {
    return gpu::roofline_kernel(0, 2 * bytes, profile_.peak_flops, sc_.cluster.gpu.hbm_bandwidth, sc_.compute).seconds;
  }

  std::string layer_name(size_t l) const {
    return l < sc_.model.layers.size() ? sc_.model.layers[l].name : "layer " + std::to_string(l);
  }

  // Layer l's ops on a replica, [first, last) of the profile's list: with several GPUs the loss's
  // kernels (the last of the last layer's forward ops, the first of its backward ops;
  // ComputeProfile::loss) run once on GPU 0 after the gather instead.
  std::pair<size_t, size_t> replica_ops(size_t l, bool forward) const {
    const auto& all = forward ? profile_.forward_ops : profile_.backward_ops;
    const size_t n = all[l].size();
    if (g_ == 1 || l + 1 != all.size()) return {0, n};
    const size_t loss = std::min(n, (forward ? profile_.loss.forward : profile_.loss.backward).size());
    return forward ? std::make_pair(size_t{0}, n - loss) : std::make_pair(loss, n);
  }

  // The forward's ops for GPU g dispatched from `host` (a parallel_apply thread: a share of each
  // op under the GIL; the main thread with one GPU: none); each layer's dispatch is one span.
  void forward_ops(int g, bool threaded, int host) {
    for (size_t l = 0; l < profile_.forward_ops.size(); ++l) {
      const std::string name = layer_name(l) + " (forward)";
      mark(host, Mark::SPAN_BEGIN, -1, name, "dispatch");
      if (l < profile_.host_only_forward.size())  // views and module calls: Python, under the GIL
        host_work(host, profile_.host_only_forward[l], threaded ? sc_.training.data_parallel.gil_share : 0.0,
                  "views, module calls", "op");
      const auto [first, last] = replica_ops(l, true);
      for (size_t i = first; i < last; ++i) {
        const double k = profile_.forward_ops[l][i];
        host_work(host, profile_.host_forward_op_s, threaded ? sc_.training.data_parallel.gil_share : 0.0, "eager op",
                  "op");
        push_kernel(host, g, k, name, DP_FORWARD);
      }
      mark(host, Mark::SPAN_END, -1, name, "dispatch");
    }
  }

  // An autograd device thread (C++): no GIL.
  void backward_ops(int g) {
    const int host = dp_autograd_stream(g);
    for (size_t l = profile_.backward_ops.size(); l-- > 0;) {
      const std::string name = layer_name(l) + " (backward)";
      mark(host, Mark::SPAN_BEGIN, -1, name, "dispatch");
      if (l < profile_.host_only_backward.size())
        host_work(host, profile_.host_only_backward[l], 0.0, "autograd view nodes", "op");
      const auto [first, last] = replica_ops(l, false);
      for (size_t i = first; i < last; ++i) {
        const double k = profile_.backward_ops[l][i];
        host_work(host, profile_.host_backward_op_s, 0.0, "eager op", "op");
        push_kernel(host, g, k, name, DP_BACKWARD);
      }
      mark(host, Mark::SPAN_END, -1, name, "dispatch");
    }
  }

  // Threads started by the main thread, which then joins them: each begins after the main
  // thread's last task; the main thread waits for the last task of each.
  template <class Body>
  void run_threads(int (*stream_of)(int), const Body& body) {
    const int fork = cursor_[static_cast<size_t>(dp_main_stream())];
    std::vector<int> joins;
    for (int i = 0; i < g_; ++i) {
      cursor_[static_cast<size_t>(stream_of(i))] = fork;
      start_after_[static_cast<size_t>(stream_of(i))] = fork;
      body(i);
      joins.push_back(cursor_[static_cast<size_t>(stream_of(i))]);
    }
    join(joins);
  }
  void join(std::vector<int> tasks) {
    tasks.erase(std::remove(tasks.begin(), tasks.end(), -1), tasks.end());
    Task t;
    t.kind = TaskKind::WAIT;
    t.stream = dp_main_stream();
    t.after = std::move(tasks);
    add(std::move(t));
  }

  int h2d_on(int g) {
    return push_kernel(dp_main_stream(), g, in_.h2d_s,
                       in_.input_on_cpu ? "input chunk to cuda:" + std::to_string(g) : "input.to(cuda:0)", DP_SCATTER,
                       Slot::H2D, "h2d");
  }

  void broadcast_coalesced(const std::vector<double>& bytes, const std::vector<int>& types) {
    for (const auto& chunk : take_tensors_cpp(bytes, types, kCoalesceBytes)) {
      double b = 0;
      for (int i : chunk) b += bytes[static_cast<size_t>(i)];
      python(in_.op_s * (1 + g_), "broadcast_coalesced: flatten, NCCL calls");
      if (chunk.size() > 1) push_kernel(dp_main_stream(), 0, copy_kernel(b), "flatten (coalesce)", DP_REPLICATE);
      if (sc_.training.data_parallel.nccl) {
        nccl_call(false, b, DP_REPLICATE);
      } else {
        for (int j = 1; j < g_; ++j) peer_copy(0, j, b, DP_REPLICATE);
      }
    }
  }

  void main_thread() {
    const auto& m = sc_.model;
    const int main = dp_main_stream();
    // The forward is dispatched once the input copy is done.
    if (!in_.input_on_cpu) join({h2d_on(0)});
    // DataParallel.forward: the device check over parameters and buffers, then Scatter.
    python(kDeviceCheckPerTensor * static_cast<double>(m.params.size() + m.buffers.size()), "device check");
    python(in_.op_s * (2 + g_), "Scatter.apply");  // tensor.chunk, one .to per device
    if (in_.input_on_cpu) {
      // Each chunk host-to-device on its GPU's background stream; the current streams wait for it.
      std::vector<int> ys;
      for (int j = 0; j < g_; ++j) ys.push_back(h2d_on(j));
      join(ys);
    } else {
      for (int j = 1; j < g_; ++j) peer_copy(0, j, in_.input_bytes / g_, DP_SCATTER);
    }
    mark(main, Mark::NONE, DP_SCATTER);

    if (g_ == 1) {
      // `if len(self.device_ids) == 1: return self.module(*inputs[0], ...)`
      forward_ops(0, false, main);
      mark(main, Mark::NONE, DP_FORWARD);
      run_threads(dp_autograd_stream, [this](int i) { backward_ops(i); });
      mark(main, Mark::NONE, DP_BACKWARD);
    } else {
      // replicate: parameters, buffers, then the module copies in Python.
      std::vector<double> pb, bb;
      std::vector<int> pt, bt;
      for (const auto& p : m.params) {
        pb.push_back(p.bytes());
        pt.push_back(static_cast<int>(p.dtype));
      }
      for (const auto& b : m.buffers) {
        bb.push_back(static_cast<double>(b.numel) * config::dtype_size(b.dtype));
        bt.push_back(static_cast<int>(b.dtype));
      }
      broadcast_coalesced(pb, pt);
      broadcast_coalesced(bb, bt);
      python(g_ * (kReplicatePerModule * static_cast<double>(m.layers.size()) +
                   kReplicatePerTensor * static_cast<double>(m.params.size() + m.buffers.size())),
             "replicate: module copies");
      mark(main, Mark::NONE, DP_REPLICATE);

      // parallel_apply: a thread per GPU (started and joined by the main thread).
      python(kThreadStartJoin * g_, "parallel_apply: threads start, join");
      run_threads(dp_apply_stream, [this](int i) { forward_ops(i, true, dp_apply_stream(i)); });
      mark(main, Mark::NONE, DP_FORWARD);

      // Gather to GPU 0.
      python(in_.op_s * (2 + g_), "Gather.apply");
      const double out = in_.output_bytes / g_;
      for (int j = 1; j < g_; ++j) peer_copy(j, 0, out, DP_GATHER);
      mark(main, Mark::NONE, DP_GATHER);

      // The loss on the gathered output, on GPU 0 (the training loop's criterion(output, target)
      // and the start of loss.backward()): the replica's kernels over G times the rows, each
      // kernel's bytes G-fold and its fixed cost once. Counted in the backward phase.
      const double gf = static_cast<double>(g_);
      for (const auto& k : profile_.loss.forward) {
        host_work(main, profile_.host_forward_op_s, 0.0, "eager op", "op");
        push_kernel(main, 0, gf * k.shape.memory_s + k.shape.overhead_s, "loss (forward, gathered batch)", DP_BACKWARD);
      }
      for (const auto& k : profile_.loss.backward) {
        host_work(main, profile_.host_backward_op_s, 0.0, "eager op", "op");
        push_kernel(main, 0, gf * k.shape.memory_s + k.shape.overhead_s, "loss (backward, gathered batch)",
                    DP_BACKWARD);
      }
      // backward: Gather's backward (Python) scatters the output gradient from GPU 0, then the
      // device threads run the replicas' backward.
      python(in_.op_s * (2 + g_), "Gather.backward: Scatter");
      for (int j = 1; j < g_; ++j) peer_copy(0, j, out, DP_BACKWARD);
      run_threads(dp_autograd_stream, [this](int i) { backward_ops(i); });
      mark(main, Mark::NONE, DP_BACKWARD);

      // ReduceAddCoalesced (Python) over the trainable parameters' gradients.
      std::vector<double> gb;
      std::vector<int> gt;
      for (const auto& p : m.params)
        if (p.requires_grad) {
          gb.push_back(p.bytes());
          gt.push_back(static_cast<int>(p.dtype));
        }
      for (const auto& c : take_tensors_py(gb, gt, kCoalesceBytes)) {
        double b = 0;
        for (int i : c) b += gb[static_cast<size_t>(i)];
        python(in_.op_s * (2 + g_), "ReduceAddCoalesced");  // G flattens, the reduce, the unflatten
        if (c.size() > 1)
          for (int i = 0; i < g_; ++i) push_kernel(main, i, copy_kernel(b), "flatten (coalesce)", DP_REDUCE);
        if (sc_.training.data_parallel.nccl) {
          nccl_call(true, b, DP_REDUCE);
        } else {
          // result = inputs[root] + nonroot[0].to(root); result.add_(other.to(root)) ...
          for (int j = 1; j < g_; ++j) {
            peer_copy(j, 0, b, DP_REDUCE);
            push_kernel(
                main, 0,
                gpu::roofline_kernel(0, 3 * b, profile_.peak_flops, sc_.cluster.gpu.hbm_bandwidth, sc_.compute).seconds,
                "add (reduce on GPU 0)", DP_REDUCE);
          }
        }
      }
      // AccumulateGrad of every trainable parameter on GPU 0 (the reduced gradients are stolen).
      host_work(main, profile_.host_backward_op_s * static_cast<double>(gb.size()), 0.0, "AccumulateGrad (GPU 0)",
                "dispatch");
      mark(main, Mark::NONE, DP_REDUCE);
    }

    // The optimizer on GPU 0.
    for (const gpu::Kernel* k : {&profile_.grad_unscale, &profile_.clip, &profile_.optimizer, &profile_.zero_grad,
                                 &profile_.optimizer_host_wait})
      if (k->seconds > 0) push_kernel(main, 0, k->seconds, "optimizer", DP_OPTIMIZER);
    mark(main, Mark::NONE, DP_OPTIMIZER);
  }

  const config::Scenario& sc_;
  const gpu::ComputeProfile& profile_;
  DpInputs in_;
  int g_;
  Plan p_;
  std::vector<int> cursor_;       // per stream: its last task (host threads: where a push follows)
  std::vector<int> start_after_;  // per thread: the task that started it, for its first task
};

}  // namespace

Plan build_data_parallel(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const DpInputs& in) {
  return DpBuilder(scenario, profile, in).build();
}

}  // namespace ddpsim::plan
