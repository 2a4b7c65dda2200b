#pragma once
// One simulation = one SimGrid Engine (REFERENCE.md §5: one Engine per process). The caller
// must not run two simulations in one process; sweeps fork a child per configuration.
#include "config/specs.hpp"
#include "report/report.hpp"

namespace ddpsim::engine {

struct RunOptions {
  bool simulate_iteration1 = true;  // false: only the steady-state step (the bench measures this)
  bool collect_trace = true;
};

// Simulates iteration 1 and the steady state of one representative rank (homogeneous data
// parallelism is symmetric, DESIGN.md) with its collectives on the whole fabric.
report::StepReport simulate(const config::Scenario& scenario, const RunOptions& options = {});

}  // namespace ddpsim::engine
