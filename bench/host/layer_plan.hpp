#pragma once
// How ddpbench turns one layer of a ddpsim-model/1 file into GPU work (pure host logic, tested
// without a GPU). Each layer becomes a short list of operations for forward and for backward:
// GEMMs whose shapes follow from the parameters' shapes and the FLOP counts, convolutions
// recovered from the weight shape and the FLOP/byte counts, and bandwidth-bound kernels that move
// the layer's remaining activation bytes. See bench/README.md, "How layers are timed".
#include <cstdint>
#include <string>
#include <vector>

#include "args.hpp"
#include "model.hpp"

namespace ddpbench {

enum class OpKind {
  GEMM,             // (strided-batched) GEMM, column-major C[m,n] = op(A) op(B)
  CONV_FWD,         // cuDNN convolution forward
  CONV_BWD_DATA,    // cuDNN convolution backward data
  CONV_BWD_FILTER,  // cuDNN convolution backward filter
  STREAM,           // streaming kernel: reads read_bytes, writes write_bytes
  ROWNORM,          // per-row normalisation (layernorm/softmax-like): rows x cols, read once, write once
  GATHER,           // embedding forward: rows = tokens, cols = embedding dim, table rows = vocab
  SCATTER_ADD,      // embedding backward: zero the weight gradient, then atomically add token rows
};
const char* op_kind_name(OpKind k);

struct GemmShape {
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  }
};

struct ConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input NCHW
  int64_t k = 1, r = 1, s = 1;         // output channels, filter height, width
  int64_t stride = 1, pad = 0, groups = 1;
  int64_t out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t out_w() const { return (w + 2 * pad - s) / stride + 1; }
  double flops() const;  // 2 x output elements x (c / groups) x r x s
  // The same work as implicit GEMMs (used when cuDNN is absent or --conv gemm).
  GemmShape fwd_gemm() const;
  GemmShape bwd_data_gemm() const;
  GemmShape bwd_filter_gemm() const;
};

struct Op {
  OpKind kind = OpKind::STREAM;
  GemmShape gemm;
  ConvShape conv;
  double read_bytes = 0, write_bytes = 0;      // STREAM
  int64_t rows = 0, cols = 0, table_rows = 0;  // ROWNORM, GATHER, SCATTER_ADD
  // Bytes of the operands (for buffer sizing): A, B inputs and C output.
  uint64_t a_bytes(int elem) const;
  uint64_t b_bytes(int elem) const;
  uint64_t c_bytes(int elem) const;
  double flops() const;
  std::string describe() const;
};

struct LayerPlan {
  std::string name, type;
  std::vector<Op> fwd, bwd;
  std::string note;  // how the shapes were derived / approximations taken
  double fwd_flops = 0, bwd_flops = 0, fwd_bytes = 0, bwd_bytes = 0;  // the layer's counts at the run's batch and dtype
};

struct PlanOptions {
  int64_t batch = 0;  // 0 = the model's batch_size
  DType dtype = DType::FLOAT32;
  bool use_cudnn = true;  // conv2d as cuDNN convolutions (else implicit GEMMs)
  int64_t seq_len = 0;    // 0 = Model::token_seq_len()
  int64_t head_dim = 64;
};

LayerPlan plan_layer(const Model& m, size_t layer_index, const PlanOptions& o);
std::vector<LayerPlan> plan_model(const Model& m, const PlanOptions& o);

// Two positive numbers with sum s and product p (the roots of x^2 - s x + p); {0,0} if none.
std::pair<double, double> roots_from_sum_product(double s, double p);

// The five foreground kernels of `ddpbench contention` (GEMM, conv-like implicit GEMM,
// attention-like batched GEMMs, element-wise, normalisation) at a size that runs ~ms on an H100.
std::vector<LayerPlan> contention_plans(DType dtype);

}  // namespace ddpbench
