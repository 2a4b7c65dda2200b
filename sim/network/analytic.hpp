#pragma once
// The analytic backend: a phase takes its closed-form time, nothing is shared between
// collectives. Fast, and exact when nothing else would share the links.
#include "network/backend.hpp"

namespace ddpsim::network {

class AnalyticBackend final : public Backend {
 public:
  std::string name() const override { return "analytic"; }
  void run_phase(Clock& clock, const Phase& phase) override {
    clock.sleep_for(phase.start_latency + phase.timing.total());
  }
};

}  // namespace ddpsim::network
