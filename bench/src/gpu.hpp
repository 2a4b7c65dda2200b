#pragma once
// Per-GPU context (device, streams, library handles, NCCL communicator), device memory, event
// timing, hardware discovery, and one-thread-per-GPU execution.
#include <barrier>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "results.hpp"

namespace ddpbench {

// Owning device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(uint64_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  uint64_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  uint64_t bytes_ = 0;
};

// One rank: a GPU with a compute stream and a separate NCCL stream (as ProcessGroupNCCL).
struct GpuContext {
  int rank = 0, nranks = 1, device = 0;
  cudaStream_t compute = nullptr, comm = nullptr;
  cublasHandle_t cublas = nullptr;
  ncclComm_t nccl = nullptr;
#ifdef DDPBENCH_HAVE_CUDNN
  cudnnHandle_t cudnn = nullptr;
#endif
  void init(int rank_, int nranks_, int device_, ncclComm_t comm_);
  void destroy();
};

// Events recorded around each iteration; elapsed times read after a synchronize.
class EventPool {
 public:
  explicit EventPool(size_t n);
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  cudaEvent_t operator[](size_t i) const { return ev_[i]; }
  size_t size() const { return ev_.size(); }
  double seconds(size_t from, size_t to) const;  // cudaEventElapsedTime / 1e3

 private:
  std::vector<cudaEvent_t> ev_;
};

// Runs `body` warmup + iters times on `stream`, timing each timed iteration with an event pair;
// returns the per-iteration times in seconds.
std::vector<double> time_iterations(cudaStream_t stream, int warmup, int iters, const std::function<void()>& body);

// Visible GPUs (throws GpuError when there are none).
int device_count();
// Clamps -g to what is visible (0 = all); throws ArgError when more are requested than exist.
int resolve_ngpus(int requested);

// Hardware of `ngpus` GPUs starting at device `first` (name, SMs, memory, peer matrix, versions).
HardwareInfo query_hardware(int ngpus, int first = 0);

// Host-side rendezvous of the rank threads.
struct RankGroup {
  explicit RankGroup(int n) : barrier(n), shared(static_cast<size_t>(n), 0.0) {}
  std::barrier<> barrier;
  std::vector<double> shared;  // one slot per rank for small exchanges
  // The maximum of `v` over ranks (every rank calls it).
  double max_over_ranks(int rank, double v);
  // The mean of `v` over ranks (every rank calls it).
  double mean_over_ranks(int rank, double v);
};

// Creates one communicator per GPU (ncclCommInitAll), runs fn(ctx, group) on one thread per GPU,
// then tears down. An exception on any rank prints "ddpbench: rank R: ..." and exits the process
// with status 1 (the other ranks may be blocked inside NCCL collectives and cannot be unwound).
void run_on_gpus(int ngpus, const std::function<void(GpuContext&, RankGroup&)>& fn);

}  // namespace ddpbench
