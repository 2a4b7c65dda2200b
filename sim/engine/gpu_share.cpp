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
// priority would then give a finished variable a share again, so ask (test() completes it if done).
bool running(const sg4::ExecPtr& e) { return e->get_state() == sg4::Activity::State::STARTED && !e->test(); }
}  // namespace

GpuShare::GpuShare(sg4::Host* host, double unit_speed, const config::GpuSpec& gpu, double memory_efficiency,
                   const gpu::ContentionParams& params)
    : host_(host), unit_(unit_speed), gpu_(gpu), memory_efficiency_(memory_efficiency), params_(params) {}

void GpuShare::compute_begin() {
  if (computing_) return;
  computing_ = true;
  if (!nccl_.empty()) rebalance();
}

void GpuShare::compute_end() {
  if (!computing_) return;
  computing_ = false;
  if (!nccl_.empty()) rebalance();
}

double GpuShare::slowdown(const gpu::KernelShape& shape) const {
  if (nccl_.empty()) return 1.0;
  return gpu::compute_slowdown(shape, load_, gpu_, memory_efficiency_, params_);
}

double GpuShare::wait_compute(double seconds) {
  const double t0 = sg4::Engine::get_clock();
  if (seconds <= 0) return 0;
  std::unique_lock lock(*mutex_);
  waiting_ = true;
  interrupted_ = false;
  while (!interrupted_)
    if (interrupt_->wait_until(lock, t0 + seconds) == std::cv_status::timeout) break;
  waiting_ = false;
  return sg4::Engine::get_clock() - t0;
}

void GpuShare::changed() {
  load_ = {};
  for (const auto& n : nccl_) {
    load_.channels += n.load.channels;
    load_.link_bytes_per_s += n.load.link_bytes_per_s;
  }
  // Only once the set is updated: the notification is a simcall, after which the compute stream
  // may run (and re-plan at the new rates) before this actor resumes.
  if (waiting_ && !interrupted_) {
    interrupted_ = true;
    interrupt_->notify_all();
  }
}

int GpuShare::start_nccl(double seconds, const gpu::CommLoad& load) {
  size_t h = 0;
  while (h < runners_.size() && runners_[h]->busy) ++h;
  if (h == runners_.size()) {
    runners_.push_back(std::make_unique<Runner>());
    Runner* r = runners_.back().get();
    sg4::Actor::create("nccl-kernels", host_, [this, r] {
      while (true) {
        r->start->acquire();
        r->exec = exec_on(host_, std::max(r->seconds, 0.0) * unit_)->set_bound(unit_);
        r->exec->start();
        r->finished = false;
        nccl_.push_back({r->exec, r->load, &r->finished, 1.0});
        changed();
        rebalance();
        r->exec->wait();
        r->finished = true;
        r->done->release();
      }
    })->daemonize();
  }
  Runner& r = *runners_[h];
  r.busy = true;
  r.seconds = seconds;
  r.load = load;
  r.start->release();
  return static_cast<int>(h);
}

void GpuShare::finish_nccl(int handle) {
  Runner& r = *runners_.at(static_cast<size_t>(handle));
  r.done->acquire();
  const auto exec = r.exec;
  r.exec = nullptr;
  r.busy = false;
  nccl_.erase(std::remove_if(nccl_.begin(), nccl_.end(), [&](const Nccl& n) { return n.exec == exec; }), nccl_.end());
  changed();
  rebalance();
}

void GpuShare::rebalance() {
  // Each priority update is a simcall, which lets other actors run at this instant and change the
  // state (another NCCL kernel, the compute stream starting or stopping): apply again until the
  // weights match the state that holds once every update is made.
  if (rebalancing_) {
    rebalance_again_ = true;
    return;
  }
  rebalancing_ = true;
  do {
    rebalance_again_ = false;
    apply_weights();
  } while (rebalance_again_);
  rebalancing_ = false;
}

void GpuShare::apply_weights() {
  // The filler lives from the first NCCL kernel to close(): cancelling an Exec does not give its
  // share back in SimGrid 3.32, so it stays and only its weight changes. At weight 1 it leaves
  // every NCCL kernel its full (bounded) rate. Weighted max-min on capacity C gives a variable of
  // weight w the rate C * w / sum(w) (below its bound), so NCCL weights equal to their target
  // rates plus a filler of the remaining capacity give exactly them. Each update is a simcall:
  // only changed weights are set.
  if (!filler_) {
    filler_ = exec_on(host_, 1e300)->set_priority(1.0);
    filler_->start();
    filler_weight_ = 1.0;
  }
  const bool both = computing_ && !nccl_.empty();
  if (!both && !weighted_) return;  // every weight is 1 already
  weighted_ = both;
  const double w = both ? 1.0 / gpu::comm_slowdown(params_) : 1.0;
  double used = 0;
  for (auto& n : nccl_) {
    used += w;
    if (n.weight == w || !running(n.exec)) continue;
    n.exec->update_priority(w);
    n.weight = w;
  }
  const double filler = both ? std::max(kCapacity - used, 1e-6) : 1.0;
  if (filler != filler_weight_) {
    filler_->update_priority(filler);
    filler_weight_ = filler;
  }
}

void GpuShare::close() {
  if (filler_) {
    filler_->cancel();
    filler_ = nullptr;
  }
}

}  // namespace ddpsim::engine
