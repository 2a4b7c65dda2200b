#pragma once
// PyTorch DDP's gradient bucket assignment (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size; torch/nn/parallel/distributed.py, _ddp_init_helper).
#include <limits>
#include <vector>

#include "config/specs.hpp"

namespace ddpsim::ddp {

struct Bucket {
  std::vector<int> param_indices;  // indices into ModelSpec::params, in the order the bucket holds them
  double bytes = 0;
  double size_limit = 0;  // the limit in force when the bucket was formed (0 = none)
  config::DType dtype = config::DType::FLOAT32;
};

inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

// compute_bucket_assignment_by_size: tensors are visited in `order`; per dtype an accumulator
// takes the tensor, then closes when its size >= the current limit (inclusive), advancing to the
// next limit if any. Leftovers are emitted at the end (per dtype, in order of first appearance;
// upstream iterates an unordered_map, which agrees for a single dtype). With `sort_by_min_index`
// (the first assignment) buckets are sorted by their smallest tensor index.
std::vector<Bucket> assign_by_size(const std::vector<config::ParamSpec>& params, const std::vector<int>& order,
                                   const std::vector<double>& limits, bool sort_by_min_index);

struct BucketPlans {
  std::vector<Bucket> iteration1;    // the plan DDP's constructor builds
  std::vector<Bucket> steady_state;  // the plan after the rebuild (== iteration1 when none happens)
  bool rebuilt = false;
  int rebuild_iteration = 0;  // first iteration that uses steady_state (2; 3 with static_graph; 0 = never)
  std::vector<double> iteration1_limits, rebuild_limits;
};

BucketPlans plan_buckets(const config::ModelSpec& model, const config::DdpSettings& ddp);

}  // namespace ddpsim::ddp
