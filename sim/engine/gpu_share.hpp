#pragma once
// Realises the contention model (gpu/contention.hpp) on one GPU. Its rates are fixed for as long
// as the GPU's state holds (which NCCL kernels run, whether the compute stream is busy): a compute
// kernel runs at 1/f (f from its shape and the NCCL load), an NCCL kernel at 1/g while the compute
// stream is busy beside it and at full speed otherwise. So the engine integrates those rates
// between state changes itself, in simulated time: the compute stream waits for its kernels' time
// at the current rates (one timed wait for many kernels), an NCCL stream waits for an NCCL kernel's
// remaining work, and every state change interrupts the waits it affects, which re-plan at the new
// rates. This is the arithmetic of one SimGrid Exec per kernel with priorities set to those rates
// (the previous realisation, which the golden reports were made with), without an activity per
// kernel: at 1,024 explicit ranks that was the whole cost. SimGrid still owns the clock, and the
// sharing of every link. With contention disabled nothing of this is created.
#include <simgrid/s4u.hpp>
#include <vector>

#include "config/specs.hpp"
#include "gpu/contention.hpp"

namespace ddpsim::engine {

class GpuShare {
 public:
  GpuShare(const config::GpuSpec& gpu, double memory_efficiency, const gpu::ContentionParams& params);

  // The compute stream starts or stops running kernels (NCCL kernels slow down while it runs).
  void compute_begin();
  void compute_end();
  // Factor by which a compute kernel of `shape` is slowed by the NCCL kernels running now (1: none).
  double slowdown(const gpu::KernelShape& shape) const;
  // Waits up to `seconds` of simulated time; returns early, with the time that passed, when the set
  // of NCCL kernels on this GPU changes.
  double wait_compute(double seconds);

  // Starts an NCCL kernel worth `seconds` alone, taking `load` from the GPU while it runs; returns
  // its handle.
  int start_nccl(double seconds, const gpu::CommLoad& load);
  // Waits until that NCCL kernel has done its work, then forgets it (until then its load counts).
  void finish_nccl(int handle);

 private:
  struct Nccl {
    int id = 0;
    double remaining = 0;  // seconds of work at full speed
    double tolerance = 0;  // below this much remaining work it is done (rounding)
    gpu::CommLoad load;
  };
  void advance();  // brings every NCCL kernel's remaining work to the current time
  void changed();  // the NCCL set changed: new load, interrupt a compute wait
  double nccl_rate() const;

  const config::GpuSpec& gpu_;
  double memory_efficiency_;
  gpu::ContentionParams params_;
  bool computing_ = false;
  std::vector<Nccl> nccl_;
  gpu::CommLoad load_;  // the sum over nccl_
  int next_id_ = 0;
  double last_ = 0;  // time advance() last ran
  simgrid::s4u::MutexPtr mutex_ = simgrid::s4u::Mutex::create();
  simgrid::s4u::ConditionVariablePtr compute_cv_ = simgrid::s4u::ConditionVariable::create();
  simgrid::s4u::ConditionVariablePtr nccl_cv_ = simgrid::s4u::ConditionVariable::create();
  bool compute_waiting_ = false, compute_interrupted_ = false;
  int nccl_waiting_ = 0;
};

}  // namespace ddpsim::engine
