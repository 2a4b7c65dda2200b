#pragma once
// The step plan of a scenario, by its wrapper (training.wrapper): plain DDP or DDP with
// ZeroRedundancyOptimizer (plan/ddp_builder), torch.nn.DataParallel (plan/dp_builder). The
// engine executes what this returns without knowing which wrapper wrote it.
#include "config/specs.hpp"
#include "gpu/compute_model.hpp"
#include "plan/step_plan.hpp"
#include "report/timeline.hpp"

namespace ddpsim::plan {

struct Built {
  gpu::ComputeProfile profile;
  Plan plan;
  report::Timeline timeline;  // its case fields preset (steps, iteration 1, DataParallel's facts)
};

// `iteration1`: simulate iteration 1 as well as the steady state (DDP).
Built build(const config::Scenario& scenario, bool iteration1);

}  // namespace ddpsim::plan
