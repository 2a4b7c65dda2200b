#pragma once
// What one simulation runs, decided before the clock starts (SimGrid-free): the optimizer steps
// (iteration 1 and the steady state), each split into micro-steps by gradient accumulation, the
// bucket plan and comm-hook chain of each, and the straggler factor of every (step, rank).
#include <cstdint>
#include <random>
#include <vector>

#include "config/specs.hpp"
#include "ddp/bucketizer.hpp"
#include "ddp/comm_hooks.hpp"

namespace ddpsim::ddp {

// One forward/backward pass. An optimizer step is `micro_steps` of them; all but the last run
// under no_sync() (no hooks, no communication).
struct MicroStep {
  int iteration = 1;  // DDP's iteration number of the optimizer step it belongs to
  int report = 0;     // index of the optimizer step (report) it belongs to
  bool sync = true;   // gradients are reduced in this pass
  bool last = true;   // the optimizer runs after it
  const std::vector<Bucket>* buckets = nullptr;
  const std::vector<BucketComm>* comm = nullptr;
  bool used_map_allreduce = false;
};

// Deterministic lognormal factors with mean 1 (Box-Muller on mt19937_64's raw output, so the
// numbers do not depend on the standard library's distributions).
class Jitter {
 public:
  explicit Jitter(uint64_t seed);
  double lognormal_mean_one(double cv);

 private:
  std::mt19937_64 rng_;  // its output sequence is fixed by the C++ standard
};

// Micro-steps point into the plan's own bucket lists: a plan is built in place and never moved.
struct StepPlan {
  StepPlan() = default;
  StepPlan(const StepPlan&) = delete;
  StepPlan& operator=(const StepPlan&) = delete;
  BucketPlans buckets;
  std::vector<BucketComm> comm_iteration1, comm_steady;
  std::vector<MicroStep> steps;
  std::vector<int> report_iteration;  // DDP iteration number per report (optimizer step)
  int steady_steps = 1;               // steady-state optimizer steps simulated
  bool has_iteration1 = true;
  std::vector<std::vector<double>> factor;  // [report][rank]: compute time factor (stragglers)
};

// `ranks`: ranks simulated explicitly (1: the representative rank).
void plan_steps(StepPlan& plan, const config::Scenario& sc, const HookCosts& costs, int ranks,
                bool simulate_iteration1);

}  // namespace ddpsim::ddp
