// A synthetic DDP step: forward, then backward in reverse layer order on the compute stream with
// PyTorch DDP's steady-state buckets (host/buckets.hpp). After each layer's backward its gradients
// are copied into their buckets (pre-divided by the world size, as the Reducer does); when a
// bucket's last gradient is in, an event is recorded on the compute stream, and buckets are launched
// strictly in index order on the NCCL stream (cudaStreamWaitEvent + ncclAllReduce). Finalize: the
// compute stream waits for the last all-reduce, then gradients are copied back out of the buckets
// (unless --bucket-view) and an optional SGD update runs. docs/facts.md §1.
#include <cstdio>
#include <map>

#include "commands.hpp"
#include "kernels.hpp"
#include "stats.hpp"

namespace ddpbench {

namespace {

ncclDataType_t nccl_type(const std::string& dtype) {
  if (dtype == "float32") return ncclFloat;
  if (dtype == "float16") return ncclHalf;
  if (dtype == "bfloat16") return ncclBfloat16;
  if (dtype == "float64") return ncclDouble;
  throw ModelError("parameter dtype '" + dtype +
                   "' cannot be all-reduced (allowed: float32, float16, bfloat16, float64)");
}

struct Slot {
  int bucket = -1;
  uint64_t offset_bytes = 0;
};

// One rank's state for one bucket plan.
class StepRunner {
 public:
  StepRunner(GpuContext& ctx, LayerRunner& runner, const Model& m, std::vector<Bucket> buckets, const StepArgs& a)
      : ctx_(ctx), runner_(runner), m_(m), buckets_(std::move(buckets)), a_(a), ev_(4 + 3 * buckets_.size()) {
    uint64_t max_param = 16;
    for (size_t b = 0; b < buckets_.size(); ++b) {
      bufs_.emplace_back(std::max<uint64_t>(buckets_[b].bytes, 16));
      launch_fill(bufs_.back().get(), buckets_[b].bytes, ctx_.compute);
      uint64_t off = 0;
      for (int p : buckets_[b].params) {
        slot_[p] = {static_cast<int>(b), off};
        const auto& mp = m_.spec.params[static_cast<size_t>(p)];
        off += static_cast<uint64_t>(mp.bytes());
        max_param = std::max<uint64_t>(max_param, static_cast<uint64_t>(mp.numel) * 8);
      }
      total_bytes_ += buckets_[b].bytes;
    }
    scratch_ = runner_.grad_scratch(max_param);
    if (a_.optimizer == "sgd") {
      weights_ = DeviceBuffer(std::max<uint64_t>(total_bytes_, 16));
      launch_fill(weights_.get(), total_bytes_, ctx_.compute);
    }
    // Which layer completes which gradients (models/README.md: layers[].params); the rest at the end.
    std::map<int, int> layer_of;
    for (size_t l = 0; l < m_.spec.layers.size(); ++l)
      for (int p : m_.spec.layers[l].params) layer_of.emplace(p, static_cast<int>(l));
    after_layer_.resize(m_.spec.layers.size());
    for (int p : m_.spec.grad_ready_order) {
      if (!slot_.count(p)) continue;
      auto it = layer_of.find(p);
      if (it == layer_of.end())
        at_end_.push_back(p);
      else
        after_layer_[static_cast<size_t>(it->second)].push_back(p);
    }
    CUDACHECK(cudaStreamSynchronize(ctx_.compute));
  }

  const std::vector<Bucket>& buckets() const { return buckets_; }
  size_t ev_start() const { return 0; }
  size_t ev_fwd() const { return 1; }
  size_t ev_bwd() const { return 2; }
  size_t ev_end() const { return 3; }
  size_t ev_ready(size_t b) const { return 4 + 3 * b; }
  size_t ev_begin(size_t b) const { return 5 + 3 * b; }
  size_t ev_done(size_t b) const { return 6 + 3 * b; }
  const EventPool& events() const { return ev_; }

  // Enqueues one step; with_comm = false gives the compute-only step (same copies, no all-reduce).
  void enqueue(bool with_comm) {
    const cudaStream_t cs = ctx_.compute;
    std::vector<size_t> pending(buckets_.size());
    for (size_t b = 0; b < buckets_.size(); ++b) pending[b] = buckets_[b].params.size();
    size_t next = 0;
    CUDACHECK(cudaEventRecord(ev_[ev_start()], cs));
    for (size_t l = 0; l < m_.spec.layers.size(); ++l) runner_.forward(l, cs);
    CUDACHECK(cudaEventRecord(ev_[ev_fwd()], cs));
    auto grads_ready = [&](const std::vector<int>& params) {
      for (int p : params) {
        const Slot& s = slot_.at(p);
        const auto& mp = m_.spec.params[static_cast<size_t>(p)];
        const int ge = ddpsim::config::dtype_size(mp.dtype);
        char* dst = bufs_[static_cast<size_t>(s.bucket)].as<char>() + s.offset_bytes;
        launch_convert_copy(scratch_, runner_.elem_size(), dst, ge, mp.numel, 1.0f / static_cast<float>(ctx_.nranks),
                            cs);
        if (--pending[static_cast<size_t>(s.bucket)] == 0)
          CUDACHECK(cudaEventRecord(ev_[ev_ready(static_cast<size_t>(s.bucket))], cs));
      }
      // Buckets launch strictly in index order (Reducer::mark_bucket_ready).
      while (next < buckets_.size() && pending[next] == 0) {
        if (with_comm) {
          CUDACHECK(cudaStreamWaitEvent(ctx_.comm, ev_[ev_ready(next)], 0));
          CUDACHECK(cudaEventRecord(ev_[ev_begin(next)], ctx_.comm));
          const auto& bk = buckets_[next];
          const size_t count = bk.bytes / static_cast<uint64_t>(dtype_bytes(bk.dtype));
          NCCLCHECK(ncclAllReduce(bufs_[next].get(), bufs_[next].get(), count, nccl_type(bk.dtype), ncclSum, ctx_.nccl,
                                  ctx_.comm));
          CUDACHECK(cudaEventRecord(ev_[ev_done(next)], ctx_.comm));
        }
        ++next;
      }
    };
    for (size_t l = m_.spec.layers.size(); l-- > 0;) {
      runner_.backward(l, cs);
      grads_ready(after_layer_[l]);
    }
    grads_ready(at_end_);
    CUDACHECK(cudaEventRecord(ev_[ev_bwd()], cs));
    if (with_comm && !buckets_.empty()) CUDACHECK(cudaStreamWaitEvent(cs, ev_[ev_done(buckets_.size() - 1)], 0));
    if (!a_.bucket_view)
      for (const auto& [p, s] : slot_) {
        const auto& mp = m_.spec.params[static_cast<size_t>(p)];
        launch_convert_copy(bufs_[static_cast<size_t>(s.bucket)].as<char>() + s.offset_bytes,
                            ddpsim::config::dtype_size(mp.dtype), const_cast<void*>(scratch_), runner_.elem_size(),
                            mp.numel, 1.0f, cs);
      }
    if (a_.optimizer == "sgd") {
      uint64_t off = 0;
      for (size_t b = 0; b < buckets_.size(); ++b) {
        launch_sgd(reinterpret_cast<float*>(weights_.as<char>() + off), bufs_[b].as<float>(),
                   static_cast<int64_t>(buckets_[b].bytes / 4), cs);
        off += buckets_[b].bytes;
      }
    }
    CUDACHECK(cudaEventRecord(ev_[ev_end()], cs));
  }

  double alone(size_t b, int warmup, int iters) {
    const auto& bk = buckets_[b];
    const size_t count = bk.bytes / static_cast<uint64_t>(dtype_bytes(bk.dtype));
    return median(time_iterations(ctx_.comm, warmup, iters, [&] {
      NCCLCHECK(
          ncclAllReduce(bufs_[b].get(), bufs_[b].get(), count, nccl_type(bk.dtype), ncclSum, ctx_.nccl, ctx_.comm));
    }));
  }

 private:
  GpuContext& ctx_;
  LayerRunner& runner_;
  const Model& m_;
  std::vector<Bucket> buckets_;
  const StepArgs& a_;
  EventPool ev_;
  std::vector<DeviceBuffer> bufs_;
  DeviceBuffer weights_;
  std::map<int, Slot> slot_;
  std::vector<std::vector<int>> after_layer_;
  std::vector<int> at_end_;
  const void* scratch_ = nullptr;
  uint64_t total_bytes_ = 0;
};

}  // namespace

void cmd_step(const StepArgs& a, const Command& cmd) {
  const Model model = load_model_arg(a.model);
  const PlanOptions opts = plan_options(a.model);
  const int64_t batch = opts.batch > 0 ? opts.batch : int64_t{model.spec.batch_size};
  const int ngpus = resolve_ngpus(a.ngpus);
  const HardwareInfo hw = query_hardware(ngpus);
  for (const auto& p : model.spec.params) (void)nccl_type(ddpsim::config::to_string(p.dtype));

  LayerTimes layer_times;
  std::vector<StepCase> cases;
  std::vector<std::vector<double>> rank_compute_only(static_cast<size_t>(ngpus));  // a slot per rank
  const int w = a.timing.warmup, n = a.timing.iters;
  run_on_gpus(ngpus, [&](GpuContext& ctx, RankGroup& group) {
    LayerRunner runner(ctx, plan_model(model, opts), a.model.dtype, a.model.tf32);
    const LayerTimes lt = time_layers(runner, ctx.compute, a.timing);
    if (ctx.rank == 0) layer_times = lt;
    for (const auto& cap : a.caps) {
      StepRunner step(ctx, runner, model, rebuilt_plan(model, cap, a.first_bucket_mb), a);
      StepCase c;
      c.cap = cap;
      c.limits = rebuild_limits(cap, a.first_bucket_mb);
      auto run = [&](bool with_comm, std::vector<double>& times, std::vector<std::vector<double>>* marks) {
        for (int it = 0; it < w + n; ++it) {
          CUDACHECK(cudaDeviceSynchronize());
          group.barrier.arrive_and_wait();  // ranks start each step together
          step.enqueue(with_comm);
          CUDACHECK(cudaDeviceSynchronize());
          if (it < w) continue;
          const auto& ev = step.events();
          times.push_back(ev.seconds(step.ev_start(), step.ev_end()));
          if (marks) {
            std::vector<double> m = {ev.seconds(step.ev_start(), step.ev_fwd()),
                                     ev.seconds(step.ev_start(), step.ev_bwd())};
            for (size_t b = 0; b < step.buckets().size(); ++b) {
              m.push_back(ev.seconds(step.ev_start(), step.ev_ready(b)));
              m.push_back(ev.seconds(step.ev_start(), step.ev_begin(b)));
              m.push_back(ev.seconds(step.ev_start(), step.ev_done(b)));
            }
            marks->push_back(std::move(m));
          }
        }
      };
      std::vector<std::vector<double>> marks;
      run(false, c.compute_only_times_s, nullptr);
      run(true, c.step_times_s, &marks);
      c.step_time_s = median(c.step_times_s);
      c.compute_only_s = median(c.compute_only_times_s);
      // Per-rank step medians (rank 0 collects them).
      group.shared[static_cast<size_t>(ctx.rank)] = c.step_time_s;
      rank_compute_only[static_cast<size_t>(ctx.rank)] = c.compute_only_times_s;
      group.barrier.arrive_and_wait();
      c.rank_step_time_s = group.shared;
      c.rank_compute_only_times_s = rank_compute_only;
      group.barrier.arrive_and_wait();
      // Each bucket's all-reduce alone (every rank takes part), averaged over ranks as nccl-tests.
      const auto& rep = marks[median_index(c.step_times_s)];
      c.forward_s = rep[0];
      c.backward_end_s = rep[1];
      for (size_t b = 0; b < step.buckets().size(); ++b) {
        CUDACHECK(cudaDeviceSynchronize());
        group.barrier.arrive_and_wait();
        StepBucketTiming t;
        t.bucket = step.buckets()[b];
        t.alone_s = group.mean_over_ranks(ctx.rank, step.alone(b, w, n));
        t.ready_s = rep[2 + 3 * b];
        t.start_s = rep[3 + 3 * b];
        t.end_s = rep[4 + 3 * b];
        c.comm_alone_s += t.alone_s;
        c.buckets.push_back(t);
      }
      if (ctx.rank == 0) cases.push_back(std::move(c));
      CUDACHECK(cudaDeviceSynchronize());
    }
  });

  std::printf("# ddpbench step: %s, batch %ld per GPU, %s, %d x %s%s\n", model.spec.name.c_str(),
              static_cast<long>(batch), dtype_name(a.model.dtype), ngpus, hw.gpu_name.c_str(),
              ngpus == 1 ? " (1 rank: NCCL all-reduce is a local copy)" : "");
  std::printf("# %-10s %8s %12s %12s %12s %12s %9s\n", "cap (MB)", "buckets", "step (ms)", "compute (ms)", "comm (ms)",
              "exposed (ms)", "overlap");
  ResultsWriter wr("step", hw, config_json(cmd));
  wr.set_step_model(
      measured_profile(model, layer_times.fwd_s, layer_times.bwd_s, hw.gpu_name, batch, dtype_name(a.model.dtype)));
  for (const auto& c : cases) {
    std::printf("  %-10s %8zu %12.3f %12.3f %12.3f %12.3f %9.3f\n",
                c.cap.is_default ? "default" : std::to_string(c.cap.mb).substr(0, 8).c_str(), c.buckets.size(),
                c.step_time_s * 1e3, c.compute_only_s * 1e3, c.comm_alone_s * 1e3, c.exposed_comm_s() * 1e3,
                c.overlap_ratio());
    wr.add_step_case(c);
  }
  std::printf(
      "# overlap = 1 - exposed/comm_alone, unclamped (below 0 when contention slows compute more than overlap "
      "hides)\n");
  write_results(wr, a.timing.json_path);
}

}  // namespace ddpbench
