#pragma once
// Typed errors of the host-side library; only main() turns them into messages and exit codes.
#include <stdexcept>
#include <string>

namespace ddpbench {

// A bad command line: the message names the flag, the bad value and what is allowed.
struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A model file that cannot be used (names the file and the JSON path).
struct ModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failing CUDA / NCCL / cuBLAS / cuDNN call (names the source file and line).
struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace ddpbench
