#include "engine/gpu_share.hpp"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {
// Host::exec_init in SimGrid 3.32 places the Exec on the *calling actor's* host; the NCCL-stream
// actor starts kernels on every GPU, so the host is set explicitly.
sg4::ExecPtr exec_on(sg4::Host* host, double flops) {
  return sg4::Exec::init()->set_flops_amount(flops)->set_host(host);
}
// An Exec can be finished in the kernel before the actor waiting on it has resumed; updating its
// priority then crashes, so ask (test() completes it if it is done).
bool running(const sg4::ExecPtr& e) { return e->get_state() == sg4::Activity::State::STARTED && !e->test(); }
}  // namespace

GpuShare::GpuShare(sg4::Host* host, double unit_speed, const config::GpuSpec& gpu, double memory_efficiency,
                   const gpu::ContentionParams& params)
    : host_(host), unit_(unit_speed), gpu_(gpu), memory_efficiency_(memory_efficiency), params_(params) {}

double GpuShare::run_compute(double seconds, const gpu::KernelShape& shape) {
  const double t0 = sg4::Engine::get_clock();
  if (seconds <= 0) return 0;
  compute_ = exec_on(host_, seconds * unit_)->set_bound(unit_);
  compute_shape_ = shape;
  compute_->start();
  rebalance();
  compute_->wait();
  compute_ = nullptr;
  rebalance();
  const double took = sg4::Engine::get_clock() - t0;
  contention_time_ += std::max(0.0, took - seconds);
  return took;
}

sg4::ExecPtr GpuShare::start_nccl(double seconds, const gpu::CommLoad& load) {
  auto e = exec_on(host_, std::max(seconds, 0.0) * unit_)->set_bound(unit_);
  e->start();
  nccl_.push_back({e, load});
  rebalance();
  return e;
}

void GpuShare::finish_nccl(const sg4::ExecPtr& exec) {
  exec->wait();
  nccl_.erase(std::remove_if(nccl_.begin(), nccl_.end(), [&](const Nccl& n) { return n.exec == exec; }), nccl_.end());
  rebalance();
}

void GpuShare::rebalance() {
  // The filler lives from the first kernel to close(): cancelling an Exec does not give its share
  // back in SimGrid 3.32, so it stays and only its weight changes. At weight 1 it leaves every
  // kernel its full (bounded) rate.
  if (!filler_) {
    filler_ = exec_on(host_, 1e300)->set_priority(1.0);
    filler_->start();
  }
  const bool both = compute_ && !nccl_.empty();
  if (!both) {
    // Kernels start at weight 1: after a rebalance that set weight 1 everywhere nothing changes
    // (each update is a simcall, and most kernels run with no NCCL kernel beside them).
    if (!weighted_) return;
    weighted_ = false;
    filler_->update_priority(1.0);
    if (compute_ && running(compute_)) compute_->update_priority(1.0);
    for (auto& n : nccl_)
      if (running(n.exec)) n.exec->update_priority(1.0);
    return;
  }
  weighted_ = true;
  gpu::CommLoad load;
  for (const auto& n : nccl_) {
    load.channels += n.load.channels;
    load.link_bytes_per_s += n.load.link_bytes_per_s;
  }
  const double f = gpu::compute_slowdown(compute_shape_, load, gpu_, memory_efficiency_, params_);
  const double g = gpu::comm_slowdown(params_);
  // Weighted max-min on capacity C: a variable of weight w gets C * w / sum(w) (below its bound),
  // so weights equal to the target rates plus a filler of the remaining capacity give exactly them.
  double used = 1.0 / f;
  if (running(compute_)) compute_->update_priority(1.0 / f);
  for (auto& n : nccl_) {
    if (running(n.exec)) n.exec->update_priority(1.0 / g);
    used += 1.0 / g;
  }
  filler_->update_priority(std::max(kCapacity - used, 1e-6));
}

void GpuShare::close() {
  if (filler_) {
    filler_->cancel();
    filler_ = nullptr;
  }
}

}  // namespace ddpsim::engine
