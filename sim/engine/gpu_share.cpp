#include "engine/gpu_share.hpp"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {
bool running(const sg4::ExecPtr& e) { return e->get_state() == sg4::Activity::State::STARTED; }
}  // namespace

GpuShare::GpuShare(sg4::Host* host, double unit_speed, const config::GpuSpec& gpu, double memory_efficiency,
                   const gpu::ContentionParams& params)
    : host_(host), unit_(unit_speed), gpu_(gpu), memory_efficiency_(memory_efficiency), params_(params) {}

double GpuShare::run_compute(double seconds, const gpu::KernelShape& shape) {
  const double t0 = sg4::Engine::get_clock();
  if (seconds <= 0) return 0;
  compute_ = host_->exec_init(seconds * unit_)->set_bound(unit_);
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
  auto e = host_->exec_init(std::max(seconds, 0.0) * unit_)->set_bound(unit_);
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
  const bool both = compute_ && !nccl_.empty();
  if (!both) {
    if (filler_) {
      filler_->cancel();
      filler_ = nullptr;
    }
    if (compute_ && running(compute_)) compute_->update_priority(1.0);
    for (auto& n : nccl_)
      if (running(n.exec)) n.exec->update_priority(1.0);
    return;
  }
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
  const double rest = std::max(kCapacity - used, 1e-9);
  if (!filler_) {
    filler_ = host_->exec_init(1e300)->set_priority(rest);
    filler_->start();
  } else {
    filler_->update_priority(rest);
  }
}

}  // namespace ddpsim::engine
