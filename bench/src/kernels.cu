// ddpbench's own kernels: bandwidth-bound stand-ins for the layers that are not GEMMs, DDP's
// bucket copies, a copy kernel that hogs memory bandwidth, and the all-reduce result check.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "check.hpp"
#include "kernels.hpp"

namespace ddpbench {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(uint64_t n, int per_thread = 1) {
  const uint64_t blocks =
      (n + static_cast<uint64_t>(kThreads) * per_thread - 1) / (static_cast<uint64_t>(kThreads) * per_thread);
  return static_cast<unsigned>(std::clamp<uint64_t>(blocks, 1, 65535ULL * 8));
}

__global__ void fill_kernel(float* p, uint64_t n) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = 0.001f * static_cast<float>((i * 2654435761ULL) % 1000ULL) - 0.5f;
}

__global__ void fill_indices_kernel(int64_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<int64_t>((static_cast<uint64_t>(i) * 2654435761ULL) >> 7);
}

// Each write vector j reads src[j], src[j + nw], src[j + 2 nw], ... below nr (every read vector is
// read once, every write vector written once).
__global__ void stream_kernel(const float4* __restrict__ src, uint64_t nr, float4* __restrict__ dst, uint64_t nw) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t start = blockIdx.x * blockDim.x + threadIdx.x;
  if (nw == 0) {
    float acc = 0.f;
    for (uint64_t i = start; i < nr; i += stride) acc += src[i].x + src[i].w;
    if (acc == 12345.678f) dst[0] = make_float4(acc, acc, acc, acc);  // keeps the loads alive
    return;
  }
  for (uint64_t j = start; j < nw; j += stride) {
    float4 v = make_float4(1.f, 1.f, 1.f, 1.f);
    for (uint64_t i = j; i < nr; i += nw) {
      const float4 x = src[i];
      v.x = v.x * 0.5f + x.x;
      v.y = v.y * 0.5f + x.y;
      v.z = v.z * 0.5f + x.z;
      v.w = v.w * 0.5f + x.w;
    }
    dst[j] = v;
  }
}

template <typename T>
__device__ float to_f(T x) {
  return static_cast<float>(x);
}
template <typename T>
__device__ T from_f(float x) {
  return static_cast<T>(x);
}

// One block per row: the row is loaded once (kept in registers/shared memory), mean and variance
// are reduced, and the normalised row written once.
template <typename T>
__global__ void rownorm_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t rows, int64_t cols) {
  extern __shared__ float row[];
  __shared__ float red[2][kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = src + r * cols;
    float s = 0.f, ss = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float x = to_f(in[c]);
      row[c] = x;
      s += x;
      ss += x * x;
    }
    for (int o = 16; o > 0; o >>= 1) {
      s += __shfl_xor_sync(0xffffffffu, s, o);
      ss += __shfl_xor_sync(0xffffffffu, ss, o);
    }
    if ((threadIdx.x & 31) == 0) {
      red[0][threadIdx.x / 32] = s;
      red[1][threadIdx.x / 32] = ss;
    }
    __syncthreads();
    float ts = 0.f, tss = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      ts += red[0][w];
      tss += red[1][w];
    }
    const float mean = ts / static_cast<float>(cols);
    const float inv = rsqrtf(fmaxf(tss / static_cast<float>(cols) - mean * mean, 0.f) + 1e-5f);
    T* out = dst + r * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = from_f<T>((row[c] - mean) * inv);
    __syncthreads();
  }
}

template <typename T>
__global__ void gather_kernel(const T* __restrict__ table, const int64_t* __restrict__ idx, T* __restrict__ out,
                              int64_t rows, int64_t cols, int64_t table_rows) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x) {
    const int64_t src = idx[t] % table_rows;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[t * cols + c] = table[src * cols + c];
  }
}

template <typename T>
__global__ void scatter_add_kernel(const T* __restrict__ grad_out, const int64_t* __restrict__ idx, float* grad_table,
                                   int64_t rows, int64_t cols, int64_t table_rows) {
  for (int64_t t = blockIdx.x; t < rows; t += gridDim.x) {
    const int64_t dst = idx[t] % table_rows;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      atomicAdd(&grad_table[dst * cols + c], to_f(grad_out[t * cols + c]));
  }
}

template <typename S, typename D>
__global__ void convert_copy_kernel(const S* __restrict__ src, D* __restrict__ dst, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f<D>(to_f(src[i]) * scale);
}

__global__ void sgd_kernel(float* p, const float* g, int64_t n) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] -= 0.01f * g[i];
}

__global__ void hog_kernel(const float4* __restrict__ src, float4* __restrict__ dst, uint64_t n, int reps) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < reps; ++r)
    for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

__global__ void set_kernel(float* p, int64_t n, float v) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

__global__ void count_wrong_kernel(const float* p, int64_t n, float expected, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (fabsf(p[i] - expected) > 1e-5f * fabsf(expected)) ++local;
  if (local) atomicAdd(wrong, local);
}

}  // namespace

void launch_fill(void* p, uint64_t bytes, cudaStream_t s) {
  const uint64_t n = bytes / sizeof(float);
  if (n == 0) return;
  fill_kernel<<<grid_for(n, 4), kThreads, 0, s>>>(static_cast<float*>(p), n);
  CUDACHECK(cudaGetLastError());
}

void launch_fill_indices(int64_t* p, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  fill_indices_kernel<<<grid_for(static_cast<uint64_t>(n), 4), kThreads, 0, s>>>(p, n);
  CUDACHECK(cudaGetLastError());
}

void launch_stream(const void* src, uint64_t read_bytes, void* dst, uint64_t write_bytes, cudaStream_t s) {
  const uint64_t nr = (read_bytes + 15) / 16, nw = (write_bytes + 15) / 16;
  if (nr == 0 && nw == 0) return;
  stream_kernel<<<grid_for(std::max(nr, nw), 4), kThreads, 0, s>>>(static_cast<const float4*>(src), nr,
                                                                   static_cast<float4*>(dst), nw);
  CUDACHECK(cudaGetLastError());
}

void launch_rownorm(const void* src, void* dst, int64_t rows, int64_t cols, int elem_size, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  const size_t smem = static_cast<size_t>(cols) * sizeof(float);
  if (smem > 48 * 1024) {  // rows too long for shared memory: a streaming kernel of the same bytes
    const uint64_t b = static_cast<uint64_t>(rows * cols * elem_size);
    launch_stream(src, b, dst, b, s);
    return;
  }
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 4));
  if (elem_size == 4)
    rownorm_kernel<float>
        <<<grid, kThreads, smem, s>>>(static_cast<const float*>(src), static_cast<float*>(dst), rows, cols);
  else
    rownorm_kernel<__half>
        <<<grid, kThreads, smem, s>>>(static_cast<const __half*>(src), static_cast<__half*>(dst), rows, cols);
  CUDACHECK(cudaGetLastError());
}

void launch_gather(const void* table, const int64_t* idx, void* out, int64_t rows, int64_t cols, int64_t table_rows,
                   int elem_size, cudaStream_t s) {
  if (rows <= 0 || cols <= 0 || table_rows <= 0) return;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 4));
  if (elem_size == 4)
    gather_kernel<float><<<grid, kThreads, 0, s>>>(static_cast<const float*>(table), idx, static_cast<float*>(out),
                                                   rows, cols, table_rows);
  else
    gather_kernel<__half><<<grid, kThreads, 0, s>>>(static_cast<const __half*>(table), idx, static_cast<__half*>(out),
                                                    rows, cols, table_rows);
  CUDACHECK(cudaGetLastError());
}

void launch_scatter_add(const void* grad_out, const int64_t* idx, void* grad_table, int64_t rows, int64_t cols,
                        int64_t table_rows, int elem_size, cudaStream_t s) {
  if (rows <= 0 || cols <= 0 || table_rows <= 0) return;
  // PyTorch's dense embedding backward starts from a zeroed weight gradient.
  CUDACHECK(cudaMemsetAsync(grad_table, 0, static_cast<size_t>(table_rows * cols) * static_cast<size_t>(elem_size), s));
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, 65535LL * 4));
  // Float atomics for every precision (the table is addressed as float: same row count, and for
  // 2-byte types only the first half of each row's bytes is touched twice as densely).
  const int64_t fcols = elem_size == 4 ? cols : std::max<int64_t>(1, cols / 2);
  if (elem_size == 4)
    scatter_add_kernel<float><<<grid, kThreads, 0, s>>>(static_cast<const float*>(grad_out), idx,
                                                        static_cast<float*>(grad_table), rows, fcols, table_rows);
  else
    scatter_add_kernel<__half><<<grid, kThreads, 0, s>>>(static_cast<const __half*>(grad_out), idx,
                                                         static_cast<float*>(grad_table), rows, fcols, table_rows);
  CUDACHECK(cudaGetLastError());
}

void launch_convert_copy(const void* src, int src_elem, void* dst, int dst_elem, int64_t n, float scale,
                         cudaStream_t s) {
  if (n <= 0) return;
  const unsigned grid = grid_for(static_cast<uint64_t>(n), 4);
  if (src_elem == 4 && dst_elem == 4)
    convert_copy_kernel<float, float>
        <<<grid, kThreads, 0, s>>>(static_cast<const float*>(src), static_cast<float*>(dst), n, scale);
  else if (src_elem == 4)
    convert_copy_kernel<float, __half>
        <<<grid, kThreads, 0, s>>>(static_cast<const float*>(src), static_cast<__half*>(dst), n, scale);
  else if (dst_elem == 4)
    convert_copy_kernel<__half, float>
        <<<grid, kThreads, 0, s>>>(static_cast<const __half*>(src), static_cast<float*>(dst), n, scale);
  else
    convert_copy_kernel<__half, __half>
        <<<grid, kThreads, 0, s>>>(static_cast<const __half*>(src), static_cast<__half*>(dst), n, scale);
  CUDACHECK(cudaGetLastError());
}

void launch_sgd(float* p, const float* g, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  sgd_kernel<<<grid_for(static_cast<uint64_t>(n), 4), kThreads, 0, s>>>(p, g, n);
  CUDACHECK(cudaGetLastError());
}

void launch_hog(const void* src, void* dst, uint64_t bytes, int blocks, int reps, cudaStream_t s) {
  const uint64_t n = bytes / 16;
  if (n == 0 || reps <= 0) return;
  hog_kernel<<<static_cast<unsigned>(std::max(blocks, 1)), 512, 0, s>>>(static_cast<const float4*>(src),
                                                                        static_cast<float4*>(dst), n, reps);
  CUDACHECK(cudaGetLastError());
}

void launch_set(float* p, int64_t n, float value, cudaStream_t s) {
  if (n <= 0) return;
  set_kernel<<<grid_for(static_cast<uint64_t>(n), 4), kThreads, 0, s>>>(p, n, value);
  CUDACHECK(cudaGetLastError());
}

void launch_count_wrong(const float* p, int64_t n, float expected, unsigned long long* wrong, cudaStream_t s) {
  if (n <= 0) return;
  count_wrong_kernel<<<grid_for(static_cast<uint64_t>(n), 4), kThreads, 0, s>>>(p, n, expected, wrong);
  CUDACHECK(cudaGetLastError());
}

}  // namespace ddpbench
