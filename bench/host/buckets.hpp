#pragma once
// PyTorch DDP's gradient bucket assignment, as in the steady state (after the rebuild).
// Mirrors torch/csrc/distributed/c10d/reducer.cpp: compute_bucket_assignment_by_size() and
// Reducer::rebuild_buckets(); see docs/facts.md §1.
#include <cstdint>
#include <string>
#include <vector>

#include "args.hpp"
#include "model.hpp"

namespace ddpbench {

struct BucketTensor {
  int index = 0;       // parameter index
  uint64_t bytes = 0;  // numel x element size
  std::string dtype = "float32";
};

struct Bucket {
  std::vector<int> params;  // parameter indices, in the order the bucket holds them
  uint64_t bytes = 0;
  uint64_t size_limit = 0;  // the limit in force when the bucket was formed
  std::string dtype = "float32";
};

// compute_bucket_assignment_by_size with tensor_indices given (the rebuild): tensors are visited in
// the given order; per dtype an accumulator takes the tensor, then closes when its size >= the
// current limit (inclusive) and advances to the next limit if there is one. A tensor larger than the
// limit shares the bucket it overflowed. Leftovers are emitted at the end, per dtype in order of first
// appearance. No sorting (rebuilt buckets keep the ready order).
std::vector<Bucket> assign_by_size(const std::vector<BucketTensor>& tensors, const std::vector<uint64_t>& limits);

// int(bucket_cap_mb * 1024 * 1024), as distributed.py converts it.
uint64_t cap_bytes(double mb);

// The rebuild's limits [first_bucket_bytes, bucket_bytes_cap]. first_bucket_bytes is 1 MiB
// (dist._DEFAULT_FIRST_BUCKET_BYTES) when the cap is PyTorch's default, and the cap itself when the
// user passed bucket_cap_mb (recent PyTorch, distributed.py _ddp_init_helper). first_bucket_mb > 0
// overrides this (e.g. 1 reproduces older releases, which always used 1 MiB).
std::vector<uint64_t> rebuild_limits(const CapSpec& cap, double first_bucket_mb);

// The steady-state plan of a model: requires_grad parameters in grad_ready_order.
std::vector<Bucket> rebuilt_plan(const Model& m, const CapSpec& cap, double first_bucket_mb);

}  // namespace ddpbench
