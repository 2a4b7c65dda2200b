#include "ddp/bucketizer.hpp"

#include <algorithm>

namespace ddpsim::ddp {

std::vector<Bucket> assign_by_size(const std::vector<config::ParamSpec>& params, const std::vector<int>& order,
                                   const std::vector<double>& limits, bool sort_by_min_index) {
  struct Accumulator {
    Bucket bucket;
    size_t limit_index = 0;
  };
  std::vector<Bucket> result;
  // One accumulator per dtype (the device is the same for every tensor of a rank), kept in
  // order of first appearance so that leftovers come out deterministically.
  std::vector<std::pair<config::DType, Accumulator>> accs;
  auto acc_for = [&](config::DType t) -> Accumulator& {
    for (auto& [k, a] : accs)
      if (k == t) return a;
    accs.push_back({t, Accumulator{}});
    accs.back().second.bucket.dtype = t;
    return accs.back().second;
  };
  for (int idx : order) {
    const auto& p = params[idx];
    Accumulator& a = acc_for(p.dtype);
    a.bucket.param_indices.push_back(idx);
    a.bucket.bytes += p.bytes();
    const double limit = limits.empty() ? kNoLimit : limits[a.limit_index];
    a.bucket.size_limit = limit;
    if (a.bucket.bytes >= limit) {  // reducer.cpp: `if (bucket.size >= bucket_size_limit)`
      result.push_back(std::move(a.bucket));
      a.bucket = Bucket{};
      a.bucket.dtype = p.dtype;
      if (a.limit_index + 1 < limits.size()) ++a.limit_index;
    }
  }
  for (auto& [k, a] : accs)
    if (!a.bucket.param_indices.empty()) result.push_back(std::move(a.bucket));
  if (sort_by_min_index) {
    std::stable_sort(result.begin(), result.end(), [](const Bucket& x, const Bucket& y) {
      return *std::min_element(x.param_indices.begin(), x.param_indices.end()) <
             *std::min_element(y.param_indices.begin(), y.param_indices.end());
    });
  }
  return result;
}

BucketPlans plan_buckets(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  BucketPlans plans;
  std::vector<int> registration;
  for (size_t i = 0; i < model.params.size(); ++i)
    if (model.params[i].requires_grad) registration.push_back(static_cast<int>(i));

  const double cap = ddp.bucket_cap_bytes();
  const double first = ddp.first_bucket_cap_bytes();
  // _ddp_init_helper: one bucket per dtype in iteration 1 unless find_unused_parameters without
  // static_graph; then [first cap, cap] (recent PyTorch: [cap] when the cap was set explicitly,
  // which first_bucket_cap_bytes() already folds in).
  if (ddp.static_graph || !ddp.find_unused_parameters)
    plans.iteration1_limits = {kNoLimit};
  else
    plans.iteration1_limits = {first, cap};
  plans.iteration1 = assign_by_size(model.params, registration, plans.iteration1_limits, true);
  // The Reducer receives the bucket list reversed: bucket 0 holds the last-registered parameters.
  std::reverse(plans.iteration1.begin(), plans.iteration1.end());

  // Reducer::rebuild_buckets: only when static_graph or not find_unused_parameters, once, from the
  // recorded gradient-ready order with limits [first_bucket_bytes_cap, bucket_bytes_cap]; no sort.
  if (ddp.static_graph || !ddp.find_unused_parameters) {
    plans.rebuilt = true;
    plans.rebuild_iteration = ddp.static_graph ? 3 : 2;
    plans.rebuild_limits = {first, cap};
    plans.steady_state = assign_by_size(model.params, model.grad_ready_order, plans.rebuild_limits, false);
  } else {
    plans.steady_state = plans.iteration1;
  }
  return plans;
}

}  // namespace ddpsim::ddp
