#pragma once
// Every CUDA / NCCL / cuBLAS / cuDNN call is checked; a failure throws GpuError naming the call,
// the source file and line (as nccl-tests' CUDACHECK/NCCLCHECK, but as an exception: main() turns
// it into a message and a non-zero exit status).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "errors.hpp"

#ifdef DDPBENCH_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace ddpbench::detail {
[[noreturn]] inline void fail(const char* file, int line, const char* what, const std::string& msg) {
  throw GpuError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " + msg);
}
}  // namespace ddpbench::detail

#define CUDACHECK(cmd)                                                                                                \
  do {                                                                                                                \
    const cudaError_t e_ = (cmd);                                                                                     \
    if (e_ != cudaSuccess)                                                                                            \
      ::ddpbench::detail::fail(__FILE__, __LINE__, #cmd, std::string("CUDA error '") + cudaGetErrorString(e_) + "'"); \
  } while (0)

#define NCCLCHECK(cmd)                                                                                                \
  do {                                                                                                                \
    const ncclResult_t r_ = (cmd);                                                                                    \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                                                                    \
      ::ddpbench::detail::fail(__FILE__, __LINE__, #cmd, std::string("NCCL error '") + ncclGetErrorString(r_) + "'"); \
  } while (0)

#define CUBLASCHECK(cmd)                                                                         \
  do {                                                                                           \
    const cublasStatus_t s_ = (cmd);                                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                             \
      ::ddpbench::detail::fail(__FILE__, __LINE__, #cmd,                                         \
                               std::string("cuBLAS error '") + cublasGetStatusString(s_) + "'"); \
  } while (0)

#ifdef DDPBENCH_HAVE_CUDNN
#define CUDNNCHECK(cmd)                                                                       \
  do {                                                                                        \
    const cudnnStatus_t s_ = (cmd);                                                           \
    if (s_ != CUDNN_STATUS_SUCCESS)                                                           \
      ::ddpbench::detail::fail(__FILE__, __LINE__, #cmd,                                      \
                               std::string("cuDNN error '") + cudnnGetErrorString(s_) + "'"); \
  } while (0)
#endif
