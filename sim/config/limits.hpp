#pragma once
// Limits on what a scenario may ask the simulator to do, checked before the simulation starts so
// that a run far beyond them is refused in milliseconds with an estimate and the setting that
// raises it, instead of running for minutes and being killed. The costs are measured on the
// linear engine (README "Limits"): representative ranks simulate a few flow classes whatever the
// GPU count; simulation.ranks "all" builds a host and links per GPU and simulates every flow; explicit ranks
// (stragglers.jitter_cv, stragglers.slow_ranks) simulate every rank's compute stream each step.
#include "config/specs.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

LimitSettings parse_limits(const core::Json& j, core::Diagnostics& d);
// Adds one problem per exceeded limit to `d`, each naming the limit and how to raise it.
void check_limits(const Scenario& s, core::Diagnostics& d);

}  // namespace ddpsim::config
