#pragma once
// Realises the contention model (gpu/contention.hpp) on one GPU with SimGrid. The GPU is a host
// whose capacity is kCapacity times a unit rate. Every running NCCL kernel is an Exec bounded to
// the unit rate; while the compute stream is busy beside it, its priority is 1/g (the collective's
// slowdown) and a filler Exec takes the rest of the capacity, so SimGrid's weighted max-min
// sharing gives it exactly that rate.
//
// The compute stream itself is not an Exec: while the set of NCCL kernels on the GPU does not
// change, each compute kernel takes its contention-free time times the slowdown f for its shape
// and the current NCCL load, so a run of kernels is one timed wait; a change of the NCCL set (a
// kernel starting or finishing) interrupts the wait, and the compute stream re-plans the rest at
// the new rates. This is the same arithmetic as one Exec per kernel whose priority follows the NCCL
// set, at one activity per change instead of one per kernel. With contention disabled nothing of
// this is created.
#include <memory>
#include <simgrid/s4u.hpp>
#include <vector>

#include "config/specs.hpp"
#include "gpu/contention.hpp"

namespace ddpsim::engine {

class GpuShare {
 public:
  static constexpr double kCapacity = 16.0;  // units of the unit rate; > the sum of any target rates

  GpuShare(simgrid::s4u::Host* host, double unit_speed, const config::GpuSpec& gpu, double memory_efficiency,
           const gpu::ContentionParams& params);

  // The compute stream starts or stops running kernels (NCCL kernels slow down while it runs).
  void compute_begin();
  void compute_end();
  // Factor by which a compute kernel of `shape` is slowed by the NCCL kernels running now (1: none).
  double slowdown(const gpu::KernelShape& shape) const;
  // Waits up to `seconds` of simulated time; returns early, with the time that passed, when the set
  // of NCCL kernels on this GPU changes.
  double wait_compute(double seconds);

  // Starts an NCCL kernel worth `seconds` alone, taking `load` from the GPU while it runs; returns
  // its handle. The Exec is issued by an actor of this GPU's own: SimGrid removes a finished
  // activity from its issuer's list linearly, so one NCCL-stream actor issuing a kernel on every
  // simulated GPU would pay O(GPUs) per kernel.
  int start_nccl(double seconds, const gpu::CommLoad& load);
  // Wait for a started NCCL kernel and forget it.
  void finish_nccl(int handle);
  // Ends the filler; call once the GPU's compute stream is done.
  void close();

 private:
  void rebalance();
  void apply_weights();
  void changed();  // the NCCL set changed: interrupt a compute wait

  simgrid::s4u::Host* host_;
  double unit_;
  const config::GpuSpec& gpu_;
  double memory_efficiency_;
  gpu::ContentionParams params_;
  bool computing_ = false;
  struct Nccl {
    simgrid::s4u::ExecPtr exec;
    gpu::CommLoad load;
    const bool* finished = nullptr;  // its runner has seen it complete (no priority to update)
    double weight = 1.0;             // the priority last set
  };
  std::vector<Nccl> nccl_;
  gpu::CommLoad load_;  // the sum over nccl_
  struct Runner {       // an actor that issues one NCCL kernel at a time on this GPU
    simgrid::s4u::SemaphorePtr start = simgrid::s4u::Semaphore::create(0);
    simgrid::s4u::SemaphorePtr done = simgrid::s4u::Semaphore::create(0);
    double seconds = 0;
    gpu::CommLoad load;
    simgrid::s4u::ExecPtr exec;
    bool busy = false;
    bool finished = false;
  };
  std::vector<std::unique_ptr<Runner>> runners_;
  simgrid::s4u::ExecPtr filler_;
  bool weighted_ = false;  // NCCL priorities other than 1 are set
  double filler_weight_ = 1.0;
  bool rebalancing_ = false, rebalance_again_ = false;
  simgrid::s4u::MutexPtr mutex_ = simgrid::s4u::Mutex::create();
  simgrid::s4u::ConditionVariablePtr interrupt_ = simgrid::s4u::ConditionVariable::create();
  bool waiting_ = false, interrupted_ = false;
};

}  // namespace ddpsim::engine
