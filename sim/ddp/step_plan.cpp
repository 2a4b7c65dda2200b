#include "ddp/step_plan.hpp"

#include <cmath>

namespace ddpsim::ddp {

Jitter::Jitter(uint64_t seed) : rng_(seed) {}

double Jitter::lognormal_mean_one(double cv) {
  if (cv <= 0) return 1.0;
  const double sigma2 = std::log(1 + cv * cv);
  const double u1 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  return std::exp(-sigma2 / 2 + std::sqrt(sigma2) * z);
}

void plan_steps(StepPlan& p, const config::Scenario& sc, const HookCosts& costs, int ranks, bool simulate_iteration1) {
  p.buckets = plan_buckets(sc.model, sc.ddp);
  for (const auto& b : p.buckets.iteration1)
    p.comm_iteration1.push_back(plan_bucket_comm(b, sc.model, sc.ddp, false, costs));
  // PowerSGD compresses from start_powerSGD_iter on: the steady state reported is after it.
  for (const auto& b : p.buckets.steady_state)
    p.comm_steady.push_back(plan_bucket_comm(b, sc.model, sc.ddp, true, costs));

  // Straggler factors: per optimizer step (all its micro-steps) and rank, drawn in a fixed order.
  const int k = sc.training.gradient_accumulation_steps;
  p.steady_steps = ranks > 1 ? sc.stragglers.steps : 1;
  p.has_iteration1 = simulate_iteration1;
  const int reports = (simulate_iteration1 ? 1 : 0) + p.steady_steps;
  Jitter jitter(sc.simulation.seed);
  p.factor.assign(static_cast<size_t>(reports), std::vector<double>(static_cast<size_t>(ranks), 1.0));
  for (int s = 0; s < reports; ++s)
    for (int r = 0; r < ranks; ++r) {
      double f = jitter.lognormal_mean_one(sc.stragglers.jitter_cv);
      for (const auto& [rank, slow] : sc.stragglers.slow_ranks)
        if (rank == r) f *= slow;
      p.factor[static_cast<size_t>(s)][static_cast<size_t>(r)] = f;
    }
  const bool used_map = sc.ddp.find_unused_parameters && !sc.ddp.static_graph;
  const int steady_iteration = p.buckets.rebuilt ? p.buckets.rebuild_iteration : 2;
  int report = 0;
  auto add_step = [&](int iteration, const std::vector<Bucket>& b, const std::vector<BucketComm>& c) {
    for (int m = 0; m < k; ++m) p.steps.push_back({iteration, report, m == k - 1, m == k - 1, &b, &c, used_map});
    p.report_iteration.push_back(iteration);
    ++report;
  };
  if (simulate_iteration1) add_step(1, p.buckets.iteration1, p.comm_iteration1);
  for (int s = 0; s < p.steady_steps; ++s) add_step(steady_iteration + s, p.buckets.steady_state, p.comm_steady);
}

}  // namespace ddpsim::ddp
