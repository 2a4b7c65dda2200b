#include "layer_runner.hpp"

#include <algorithm>

#include "kernels.hpp"

namespace ddpbench {

namespace {
cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::FLOAT32: return CUDA_R_32F;
    case DType::FLOAT16: return CUDA_R_16F;
    case DType::BFLOAT16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}
}  // namespace

#ifdef DDPBENCH_HAVE_CUDNN
struct LayerRunner::ConvDesc {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  size_t ws = 0;
  ~ConvDesc() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

namespace {
cudnnDataType_t cudnn_type(DType d) {
  switch (d) {
    case DType::FLOAT32: return CUDNN_DATA_FLOAT;
    case DType::FLOAT16: return CUDNN_DATA_HALF;
    case DType::BFLOAT16: return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}
constexpr size_t kConvWorkspaceLimit = 1ULL << 30;
}  // namespace
#else
struct LayerRunner::ConvDesc {};
#endif

LayerRunner::LayerRunner(GpuContext& ctx, std::vector<LayerPlan> plans, DType dtype, bool tf32)
    : ctx_(ctx), plans_(std::move(plans)), dtype_(dtype), elem_(dtype_size(dtype)), tf32_(tf32) {
  CUDACHECK(cudaSetDevice(ctx_.device));
  uint64_t a = 16, b = 16, c = 16, idx = 8;
  size_t ws = 0;
  fwd_slots_.resize(plans_.size());
  bwd_slots_.resize(plans_.size());
  for (size_t li = 0; li < plans_.size(); ++li) {
    for (int pass = 0; pass < 2; ++pass) {
      const auto& ops = pass == 0 ? plans_[li].fwd : plans_[li].bwd;
      auto& slots = pass == 0 ? fwd_slots_[li] : bwd_slots_[li];
      for (const auto& op : ops) {
        a = std::max(a, op.a_bytes(elem_));
        b = std::max(b, op.b_bytes(elem_));
        c = std::max(c, op.c_bytes(elem_));
        if (op.kind == OpKind::GATHER || op.kind == OpKind::SCATTER_ADD)
          idx = std::max<uint64_t>(idx, static_cast<uint64_t>(op.rows) * 8);
        slots.push_back(SIZE_MAX);
        const bool is_conv =
            op.kind == OpKind::CONV_FWD || op.kind == OpKind::CONV_BWD_DATA || op.kind == OpKind::CONV_BWD_FILTER;
        if (!is_conv) continue;
#ifdef DDPBENCH_HAVE_CUDNN
        auto* d = new ConvDesc();
        convs_.push_back(d);
        slots.back() = convs_.size() - 1;
        const ConvShape& cs = op.conv;
        const cudnnDataType_t t = cudnn_type(dtype_);
        CUDNNCHECK(cudnnCreateTensorDescriptor(&d->x));
        CUDNNCHECK(cudnnCreateTensorDescriptor(&d->y));
        CUDNNCHECK(cudnnCreateFilterDescriptor(&d->w));
        CUDNNCHECK(cudnnCreateConvolutionDescriptor(&d->conv));
        CUDNNCHECK(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, t, static_cast<int>(cs.n),
                                              static_cast<int>(cs.c), static_cast<int>(cs.h), static_cast<int>(cs.w)));
        CUDNNCHECK(cudnnSetFilter4dDescriptor(d->w, t, CUDNN_TENSOR_NCHW, static_cast<int>(cs.k),
                                              static_cast<int>(cs.c / cs.groups), static_cast<int>(cs.r),
                                              static_cast<int>(cs.s)));
        CUDNNCHECK(cudnnSetConvolution2dDescriptor(d->conv, static_cast<int>(cs.pad), static_cast<int>(cs.pad),
                                                   static_cast<int>(cs.stride), static_cast<int>(cs.stride), 1, 1,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        CUDNNCHECK(cudnnSetConvolutionGroupCount(d->conv, static_cast<int>(cs.groups)));
        // PyTorch's defaults: tensor cores for half types; TF32 for float32 convolutions
        // (torch.backends.cudnn.allow_tf32 defaults to True).
        CUDNNCHECK(
            cudnnSetConvolutionMathType(d->conv, dtype_ == DType::FLOAT32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH));
        int on = 0, oc = 0, oh = 0, ow = 0;
        CUDNNCHECK(cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &on, &oc, &oh, &ow));
        CUDNNCHECK(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, t, on, oc, oh, ow));
        // Heuristic algorithm choice (as PyTorch with cudnn.benchmark=False): the first candidate
        // whose workspace fits.
        int returned = 0;
        size_t need = 0;
        if (op.kind == OpKind::CONV_FWD) {
          cudnnConvolutionFwdAlgoPerf_t perf[8];
          CUDNNCHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx_.cudnn, d->x, d->w, d->conv, d->y, 8, &returned, perf));
          for (int i = 0; i < returned; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kConvWorkspaceLimit) {
              d->fwd_algo = perf[i].algo;
              break;
            }
          CUDNNCHECK(
              cudnnGetConvolutionForwardWorkspaceSize(ctx_.cudnn, d->x, d->w, d->conv, d->y, d->fwd_algo, &need));
        } else if (op.kind == OpKind::CONV_BWD_DATA) {
          cudnnConvolutionBwdDataAlgoPerf_t perf[8];
          CUDNNCHECK(
              cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx_.cudnn, d->w, d->y, d->conv, d->x, 8, &returned, perf));
          for (int i = 0; i < returned; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kConvWorkspaceLimit) {
              d->data_algo = perf[i].algo;
              break;
            }
          CUDNNCHECK(
              cudnnGetConvolutionBackwardDataWorkspaceSize(ctx_.cudnn, d->w, d->y, d->conv, d->x, d->data_algo, &need));
        } else {
          cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
          CUDNNCHECK(
              cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx_.cudnn, d->x, d->y, d->conv, d->w, 8, &returned, perf));
          for (int i = 0; i < returned; ++i)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kConvWorkspaceLimit) {
              d->filter_algo = perf[i].algo;
              break;
            }
          CUDNNCHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx_.cudnn, d->x, d->y, d->conv, d->w,
                                                                    d->filter_algo, &need));
        }
        d->ws = need;
        ws = std::max(ws, need);
#else
        throw GpuError("layer '" + plans_[li].name +
                       "': a cuDNN convolution was planned but ddpbench was built without cuDNN");
#endif
      }
    }
  }
  // Gradient scratch for bucket copies must hold the largest parameter; callers grow it via grad_scratch().
  // Round up: the streaming kernels move whole 16-byte vectors.
  auto round_up = [](uint64_t x) { return (x + 255) / 256 * 256; };
  a = round_up(a);
  b = round_up(b);
  c = round_up(c);
  a_ = DeviceBuffer(a);
  b_ = DeviceBuffer(b);
  c_ = DeviceBuffer(c);
  idx_ = DeviceBuffer(idx);
  ws_ = DeviceBuffer(std::max<size_t>(ws, 16));
  launch_fill(a_.get(), a, ctx_.compute);
  launch_fill(b_.get(), b, ctx_.compute);
  launch_fill(c_.get(), c, ctx_.compute);
  launch_fill_indices(idx_.as<int64_t>(), static_cast<int64_t>(idx / 8), ctx_.compute);
  CUDACHECK(cudaStreamSynchronize(ctx_.compute));
}

LayerRunner::~LayerRunner() {
#ifdef DDPBENCH_HAVE_CUDNN
  for (auto* d : convs_) delete d;
#endif
}

const void* LayerRunner::grad_scratch(uint64_t bytes) {
  if (c_.bytes() < bytes) {
    CUDACHECK(cudaDeviceSynchronize());
    bytes = (bytes + 255) / 256 * 256;
    c_ = DeviceBuffer(bytes);
    launch_fill(c_.get(), bytes, ctx_.compute);
  }
  return c_.get();
}

void LayerRunner::forward(size_t layer, cudaStream_t s) {
  const auto& ops = plans_[layer].fwd;
  for (size_t i = 0; i < ops.size(); ++i) run(ops[i], fwd_slots_[layer][i], s);
}

void LayerRunner::backward(size_t layer, cudaStream_t s) {
  const auto& ops = plans_[layer].bwd;
  for (size_t i = 0; i < ops.size(); ++i) run(ops[i], bwd_slots_[layer][i], s);
}

void LayerRunner::gemm(const GemmShape& g, cudaStream_t s) {
  CUBLASCHECK(cublasSetStream(ctx_.cublas, s));
  const cudaDataType_t t = cuda_type(dtype_);
  const cublasComputeType_t compute =
      dtype_ == DType::FLOAT32 ? (tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = g.trans_a ? k : m, ldb = g.trans_b ? n : k, ldc = m;
  const cublasOperation_t oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.batch == 1) {
    CUBLASCHECK(cublasGemmEx(ctx_.cublas, oa, ob, m, n, k, &alpha, a_.get(), t, lda, b_.get(), t, ldb, &beta, c_.get(),
                             t, ldc, compute, CUBLAS_GEMM_DEFAULT));
  } else {
    CUBLASCHECK(cublasGemmStridedBatchedEx(ctx_.cublas, oa, ob, m, n, k, &alpha, a_.get(), t, lda, g.m * g.k, b_.get(),
                                           t, ldb, g.k * g.n, &beta, c_.get(), t, ldc, g.m * g.n,
                                           static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT));
  }
}

void LayerRunner::run(const Op& op, size_t conv_slot, cudaStream_t s) {
  switch (op.kind) {
    case OpKind::GEMM: gemm(op.gemm, s); return;
    case OpKind::STREAM:
      launch_stream(a_.get(), static_cast<uint64_t>(op.read_bytes), c_.get(), static_cast<uint64_t>(op.write_bytes), s);
      return;
    case OpKind::ROWNORM: launch_rownorm(a_.get(), c_.get(), op.rows, op.cols, elem_, s); return;
    case OpKind::GATHER:
      launch_gather(a_.get(), idx_.as<int64_t>(), c_.get(), op.rows, op.cols, op.table_rows, elem_, s);
      return;
    case OpKind::SCATTER_ADD:
      launch_scatter_add(a_.get(), idx_.as<int64_t>(), c_.get(), op.rows, op.cols, op.table_rows, elem_, s);
      return;
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER: {
#ifdef DDPBENCH_HAVE_CUDNN
      ConvDesc* d = convs_.at(conv_slot);
      CUDNNCHECK(cudnnSetStream(ctx_.cudnn, s));
      const float alpha = 1.0f, beta = 0.0f;
      if (op.kind == OpKind::CONV_FWD)
        CUDNNCHECK(cudnnConvolutionForward(ctx_.cudnn, &alpha, d->x, a_.get(), d->w, b_.get(), d->conv, d->fwd_algo,
                                           ws_.get(), d->ws, &beta, d->y, c_.get()));
      else if (op.kind == OpKind::CONV_BWD_DATA)
        CUDNNCHECK(cudnnConvolutionBackwardData(ctx_.cudnn, &alpha, d->w, b_.get(), d->y, a_.get(), d->conv,
                                                d->data_algo, ws_.get(), d->ws, &beta, d->x, c_.get()));
      else
        CUDNNCHECK(cudnnConvolutionBackwardFilter(ctx_.cudnn, &alpha, d->x, a_.get(), d->y, c_.get(), d->conv,
                                                  d->filter_algo, ws_.get(), d->ws, &beta, d->w, b_.get()));
      return;
#else
      (void)conv_slot;
      throw GpuError("a cuDNN convolution was planned but ddpbench was built without cuDNN");
#endif
    }
  }
}

}  // namespace ddpbench
