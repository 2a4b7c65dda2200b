#include "engine/gpu_share.hpp"

#include <algorithm>

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {

GpuShare::GpuShare(const config::GpuSpec& gpu, double memory_efficiency, const gpu::ContentionParams& params)
    : gpu_(gpu), memory_efficiency_(memory_efficiency), params_(params) {}

double GpuShare::nccl_rate() const { return computing_ ? 1.0 / gpu::comm_slowdown(params_) : 1.0; }

void GpuShare::advance() {
  const double now = sg4::Engine::get_clock();
  const double done = (now - last_) * nccl_rate();
  last_ = now;
  if (done <= 0) return;
  for (auto& n : nccl_) n.remaining = std::max(0.0, n.remaining - done);
}

void GpuShare::compute_begin() {
  if (computing_) return;
  advance();
  computing_ = true;
  if (nccl_waiting_ > 0) nccl_cv_->notify_all();  // NCCL kernels now run at 1/g
}

void GpuShare::compute_end() {
  if (!computing_) return;
  advance();
  computing_ = false;
  if (nccl_waiting_ > 0) nccl_cv_->notify_all();  // back to full speed
}

double GpuShare::slowdown(const gpu::KernelShape& shape) const {
  if (nccl_.empty()) return 1.0;
  return gpu::compute_slowdown(shape, load_, gpu_, memory_efficiency_, params_);
}

double GpuShare::wait_compute(double seconds) {
  const double t0 = sg4::Engine::get_clock();
  if (seconds <= 0) return 0;
  std::unique_lock lock(*mutex_);
  compute_waiting_ = true;
  compute_interrupted_ = false;
  while (!compute_interrupted_)
    if (compute_cv_->wait_until(lock, t0 + seconds) == std::cv_status::timeout) break;
  compute_waiting_ = false;
  return sg4::Engine::get_clock() - t0;
}

void GpuShare::changed() {
  load_ = {};
  for (const auto& n : nccl_) {
    load_.channels += n.load.channels;
    load_.link_bytes_per_s += n.load.link_bytes_per_s;
  }
  if (compute_waiting_ && !compute_interrupted_) {
    compute_interrupted_ = true;
    compute_cv_->notify_all();
  }
}

int GpuShare::start_nccl(double seconds, const gpu::CommLoad& load) {
  advance();
  Nccl n;
  n.id = next_id_++;
  n.remaining = std::max(seconds, 0.0);
  n.tolerance = 1e-12 * n.remaining;
  n.load = load;
  nccl_.push_back(n);
  changed();
  return n.id;
}

void GpuShare::finish_nccl(int handle) {
  auto find = [&] { return std::find_if(nccl_.begin(), nccl_.end(), [&](const Nccl& n) { return n.id == handle; }); };
  std::unique_lock lock(*mutex_);
  while (true) {
    advance();
    const auto it = find();
    if (it == nccl_.end() || it->remaining <= it->tolerance) break;
    // Its end at the current rate; a change of the compute stream's state wakes us to re-plan.
    const double now = sg4::Engine::get_clock();
    const double end = now + it->remaining / nccl_rate();
    if (end <= now * (1 + 1e-15)) break;  // below the clock's resolution: done
    ++nccl_waiting_;
    nccl_cv_->wait_until(lock, end);
    --nccl_waiting_;
  }
  const auto it = find();
  if (it != nccl_.end()) nccl_.erase(it);
  changed();
}

}  // namespace ddpsim::engine
