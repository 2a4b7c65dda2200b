#pragma once
// The analytic backend: a phase takes its closed-form time, nothing is shared between
// collectives. Fast, and exact when nothing else would share the links.
//
// Link statistics: the bytes per link class follow from the ring alone (every hop's payload on
// its source's port out and its destination's port in; a node's NICs as one link each way), so
// they are reported; busy times and utilisation are not, because collectives here do not share
// links (two at once would each run at full rate): they need simulation.backend "flow", as do the
// fabric's upper tiers.
#include "config/specs.hpp"
#include "network/backend.hpp"
#include "network/link_ledger.hpp"

namespace ddpsim::network {

class AnalyticBackend final : public Backend {
 public:
  AnalyticBackend() = default;  // without link statistics
  AnalyticBackend(const config::ClusterSpec& cluster, const collectives::RingPlan& ring);
  std::string name() const override { return "analytic"; }
  void run_phase(Clock& clock, const Phase& phase) override;
  std::vector<LinkClassTotals> link_totals() const override;
  std::string links_note() const override;

 private:
  LinkLedger ledger_;
  std::vector<std::string> names_;
  std::vector<int> links_;  // the ledger links every phase's hop payload goes to
  double bottleneck_ = 0;
};

}  // namespace ddpsim::network
