#include "network/analytic.hpp"

#include "fabric/fabric.hpp"

namespace ddpsim::network {

AnalyticBackend::AnalyticBackend(const config::ClusterSpec& c, const collectives::RingPlan& ring)
    : bottleneck_(ring.bottleneck_bw) {
  if (ring.nranks <= 1) return;
  const auto [intra, inter, n_intra, n_inter] = hop_classes(ring);
  const int out = ledger_.add_class(intra_port_class(c, true));
  const int in = ledger_.add_class(intra_port_class(c, false));
  const int up = ledger_.add_class(fabric::to_string(fabric::LinkClass::NIC_UP));
  const int down = ledger_.add_class(fabric::to_string(fabric::LinkClass::NIC_DOWN));
  auto link = [&](int cls, double bw, long long n, std::string name) {
    names_.push_back(std::move(name));
    links_.push_back(ledger_.add_link(cls, bw, n, static_cast<long long>(names_.size()) - 1));
  };
  const std::string fab = config::to_string(c.fabric);
  if (intra) {
    link(out, intra->bandwidth, n_intra, "gpu" + std::to_string(intra->src) + ">" + fab);
    link(in, intra->bandwidth, n_intra, fab + ">gpu" + std::to_string(intra->dst));
  }
  if (inter) {
    link(up, inter->bandwidth, n_inter, "node" + std::to_string(inter->src / c.gpus_per_node) + ".nics>network");
    link(down, inter->bandwidth, n_inter, "network>node" + std::to_string(inter->dst / c.gpus_per_node) + ".nics");
  }
}

void AnalyticBackend::run_phase(Clock& clock, const Phase& phase) {
  clock.sleep_for(phase.start_latency + phase.timing.total());
  if (!phase.counted || links_.empty()) return;
  const double payload = phase.hop_bytes > 0 ? phase.hop_bytes : phase.timing.transfer * bottleneck_;
  for (int l : links_) ledger_.add_bytes(l, payload);
}

std::vector<LinkClassTotals> AnalyticBackend::link_totals() const {
  return ledger_.totals([&](long long key) { return names_[static_cast<size_t>(key)]; }, false);
}

std::string AnalyticBackend::links_note() const {
  if (links_.empty()) return "";
  return "analytic backend: bytes from the ring (a node's NICs as one link); busy share, utilisation and the "
         "fabric's tiers need simulation.backend flow";
}

}  // namespace ddpsim::network
