#pragma once
// Host wrappers of ddpbench's own CUDA kernels (kernels.cu). Each launches on `stream` and checks
// the launch. Sizes are in bytes or elements as named.
#include <cuda_runtime.h>

#include <cstdint>

namespace ddpbench {

// Fills `bytes` bytes with small float values (data content does not affect timing; this keeps
// GEMMs away from NaN/denormal inputs).
void launch_fill(void* p, uint64_t bytes, cudaStream_t s);
// Fills n int64 indices with pseudo-random values (taken modulo the table size by the gather).
void launch_fill_indices(int64_t* p, int64_t n, cudaStream_t s);
// Streaming kernel: reads `read_bytes` from src and writes `write_bytes` to dst (16-byte vectors).
void launch_stream(const void* src, uint64_t read_bytes, void* dst, uint64_t write_bytes, cudaStream_t s);
// Row normalisation (layernorm-like): each row of `cols` elements read once, written once.
void launch_rownorm(const void* src, void* dst, int64_t rows, int64_t cols, int elem_size, cudaStream_t s);
// Embedding forward: out[t, :] = table[idx[t] % table_rows, :].
void launch_gather(const void* table, const int64_t* idx, void* out, int64_t rows, int64_t cols, int64_t table_rows,
                   int elem_size, cudaStream_t s);
// Embedding backward: grad_table zeroed, then grad_table[idx[t] % table_rows, :] += grad_out[t, :]
// (float atomics; the data type only changes the bytes moved).
void launch_scatter_add(const void* grad_out, const int64_t* idx, void* grad_table, int64_t rows, int64_t cols,
                        int64_t table_rows, int elem_size, cudaStream_t s);
// Copies n elements converting the element size (2 or 4 bytes) and multiplying by `scale` (DDP's
// copy of a gradient into its bucket, pre-divided by the world size).
void launch_convert_copy(const void* src, int src_elem, void* dst, int dst_elem, int64_t n, float scale,
                         cudaStream_t s);
// SGD update p -= lr * g over n float elements.
void launch_sgd(float* p, const float* g, int64_t n, cudaStream_t s);
// Bandwidth hog: `blocks` CTAs copy `bytes` from src to dst, `reps` times.
void launch_hog(const void* src, void* dst, uint64_t bytes, int blocks, int reps, cudaStream_t s);
// Sets n floats to `value`.
void launch_set(float* p, int64_t n, float value, cudaStream_t s);
// Counts elements of p that differ from `expected` (relative tolerance 1e-5) into *wrong.
void launch_count_wrong(const float* p, int64_t n, float expected, unsigned long long* wrong, cudaStream_t s);

}  // namespace ddpbench
