#pragma once
// Executes LayerPlans (host/layer_plan.hpp) on a GPU: cuBLAS GEMMs, cuDNN convolutions (when
// built with cuDNN) and ddpbench's bandwidth kernels, all on the stream passed in. Operands live in
// three scratch buffers sized for the largest operation: the data is garbage-but-finite and the
// timing is what matters.
#include <vector>

#include "gpu.hpp"
#include "layer_plan.hpp"

namespace ddpbench {

class LayerRunner {
 public:
  LayerRunner(GpuContext& ctx, std::vector<LayerPlan> plans, DType dtype, bool tf32);
  ~LayerRunner();
  LayerRunner(const LayerRunner&) = delete;
  LayerRunner& operator=(const LayerRunner&) = delete;

  void forward(size_t layer, cudaStream_t s);
  void backward(size_t layer, cudaStream_t s);
  const std::vector<LayerPlan>& plans() const { return plans_; }
  // Scratch that a weight gradient can be read from (at least `bytes` long, else grown).
  const void* grad_scratch(uint64_t bytes);
  int elem_size() const { return elem_; }

 private:
  void run(const Op& op, size_t conv_slot, cudaStream_t s);
  void gemm(const GemmShape& g, cudaStream_t s);

  GpuContext& ctx_;
  std::vector<LayerPlan> plans_;
  DType dtype_;
  int elem_;
  bool tf32_;
  DeviceBuffer a_, b_, c_, idx_, ws_;
  struct ConvDesc;
  std::vector<ConvDesc*> convs_;  // one per conv op, in plan order (fwd then bwd per layer)
  std::vector<std::vector<size_t>> fwd_slots_, bwd_slots_;
};

}  // namespace ddpbench
