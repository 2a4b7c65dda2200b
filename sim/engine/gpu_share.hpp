#pragma once
// Realises the contention model (gpu/contention.hpp) with SimGrid resource sharing: one GPU is
// one host whose capacity is kCapacity times a unit rate; every kernel and every running NCCL
// kernel is an Exec bounded to the unit rate, so alone it runs at full speed. While compute and
// NCCL kernels run together, their priorities are set to their target rates (1/f and 1/g) and a
// filler Exec takes the rest of the capacity, so SimGrid's weighted max-min sharing gives each
// exactly its slowed rate. With contention disabled nothing of this is created.
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

  // Runs one compute-stream kernel of `seconds` (alone) and `shape` to completion; returns the time it took.
  double run_compute(double seconds, const gpu::KernelShape& shape);
  // Starts an NCCL kernel worth `seconds` alone, taking `load` from the GPU while it runs.
  simgrid::s4u::ExecPtr start_nccl(double seconds, const gpu::CommLoad& load);
  // Wait for a started NCCL kernel and forget it.
  void finish_nccl(const simgrid::s4u::ExecPtr& exec);
  double contention_time() const { return contention_time_; }  // extra compute time caused so far
  // Ends the filler; call once the GPU's compute stream is done.
  void close();

 private:
  void rebalance();

  simgrid::s4u::Host* host_;
  double unit_;
  const config::GpuSpec& gpu_;
  double memory_efficiency_;
  gpu::ContentionParams params_;
  simgrid::s4u::ExecPtr compute_;
  gpu::KernelShape compute_shape_;
  struct Nccl {
    simgrid::s4u::ExecPtr exec;
    gpu::CommLoad load;
  };
  std::vector<Nccl> nccl_;
  simgrid::s4u::ExecPtr filler_;
  bool weighted_ = false;  // priorities other than 1 are set (compute and NCCL kernels share the GPU)
  double contention_time_ = 0;
};

}  // namespace ddpsim::engine
