#pragma once
// One simulation = one SimGrid Engine (docs/facts.md §5: one Engine per process). The caller
// must not run two simulations in one process; sweeps fork a child per configuration.
//
// The engine (docs/architecture.md): plan::build writes the scenario's step plan (every wrapper);
// the executor (engine/executor.hpp) runs it with an actor per stream -- compute streams, NCCL
// streams timed by collectives::CollectiveModel and realised on the network::Backend the
// scenario names (network/registry.hpp), a process's host threads -- with GPU sharing between
// compute and NCCL kernels in engine/gpu_share.hpp. Everything observed goes into a
// report::Timeline, which report::make_report (report/metrics.hpp) turns into the report.
#include "config/specs.hpp"
#include "report/report.hpp"

namespace ddpsim::engine {

struct RunOptions {
  bool simulate_iteration1 = true;  // false: only the steady-state step (the bench measures this)
  bool collect_trace = true;
  // The process ends once this run's report is written (`run`, a bench child): the engine is left
  // to the operating system instead of freeing every host, link and actor (keep_until_exit).
  bool process_ends_after = false;
};

// Simulates iteration 1 and the steady state: one representative rank, or every rank when
// stragglers make them differ, with its collectives on the whole fabric.
report::StepReport simulate(const config::Scenario& scenario, const RunOptions& options = {});

// Which simulated ranks get their own tracks in the trace. Up to kTraceAllRanksUpTo explicit
// ranks: every one. Beyond: rank 0 (the reported rank), the slowest and the median rank by their
// compute factor summed over the simulated steps (stragglers, jitter; ties to the lower rank;
// median = the middle of that order, the lower middle for an even count), each listed once with
// its roles. `factor` is [step][rank] (ddp::StepPlan::factor).
inline constexpr int kTraceAllRanksUpTo = 64;
std::vector<report::TracedRank> select_traced_ranks(const std::vector<std::vector<double>>& factor, int ranks);

}  // namespace ddpsim::engine
