#include "network/flow.hpp"

#include <cmath>
#include <simgrid/s4u.hpp>
#include <string>

namespace sg4 = simgrid::s4u;

namespace ddpsim::network {

void FlowNetwork::configure(sg4::Engine& e) {
  // Pure max-min: no TCP-gamma window cap, no cross traffic, CM02 without LV08's factors.
  e.set_config("network/model:CM02");
  e.set_config("network/crosstraffic:0");
  e.set_config("network/TCP-gamma:0");
  e.set_config("network/bandwidth-factor:1.0");
  e.set_config("network/latency-factor:1.0");
  e.set_config("network/weight-S:0");
  // The default timing precision (1e-9 s) would round event times; we want exact sums.
  e.set_config("surf/precision:1e-13");
}

FlowNetwork::FlowNetwork(sg4::Engine& /*engine*/, const config::ClusterSpec& c, const collectives::RingPlan& ring,
                         double gpu_speed)
    : ring_(ring) {
  const int n = c.world_size();
  auto* zone = sg4::create_full_zone("cluster");
  hosts_.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) hosts_.push_back(zone->create_host("gpu" + std::to_string(r), gpu_speed)->seal());
  if (n > 1) {
    std::vector<sg4::Link*> tx(n), rx(n);
    for (int r = 0; r < n; ++r) {
      tx[r] = zone->create_link("gpu" + std::to_string(r) + "-tx", c.intra_bandwidth())->set_latency(0)->seal();
      rx[r] = zone->create_link("gpu" + std::to_string(r) + "-rx", c.intra_bandwidth())->set_latency(0)->seal();
    }
    std::vector<sg4::Link*> nic_tx, nic_rx;
    if (c.nodes > 1) {
      for (int k = 0; k < c.nodes; ++k) {
        nic_tx.push_back(
            zone->create_link("node" + std::to_string(k) + "-nic-tx", c.inter_bandwidth())->set_latency(0)->seal());
        nic_rx.push_back(
            zone->create_link("node" + std::to_string(k) + "-nic-rx", c.inter_bandwidth())->set_latency(0)->seal());
      }
    }
    for (const auto& h : ring_.hops) {
      std::vector<sg4::LinkInRoute> links;
      if (h.inter_node) {
        links.emplace_back(nic_tx[static_cast<size_t>(h.src / c.gpus_per_node)]);
        links.emplace_back(nic_rx[static_cast<size_t>(h.dst / c.gpus_per_node)]);
      } else {
        links.emplace_back(tx[static_cast<size_t>(h.src)]);
        links.emplace_back(rx[static_cast<size_t>(h.dst)]);
      }
      if (h.src != h.dst)
        zone->add_route(hosts_[h.src]->get_netpoint(), hosts_[h.dst]->get_netpoint(), nullptr, nullptr, links, false);
    }
  }
  zone->seal();
}

void FlowNetwork::ring_phase(const collectives::PhaseTiming& phase, config::Fidelity fidelity) {
  const int n = ring_.nranks;
  if (n <= 1) return;
  const double volume = phase.transfer * ring_.bottleneck_bw;
  const int steps = n - 1;
  std::vector<sg4::CommPtr> comms;
  comms.reserve(ring_.hops.size());
  auto round = [&](double bytes) {
    if (bytes <= 0) return;
    comms.clear();
    // Flows carry whole bytes; the fraction of a byte left over is added as its transfer time so
    // that the uncontended phase time is exact.
    const double whole = std::floor(bytes);
    const auto size = static_cast<uint64_t>(whole);
    if (size > 0) {
      for (const auto& h : ring_.hops) comms.push_back(sg4::Comm::sendto_async(hosts_[h.src], hosts_[h.dst], size));
      flows_ += comms.size();
      sg4::Comm::wait_all(comms);
    }
    if (bytes > whole) sg4::this_actor::sleep_for((bytes - whole) / ring_.bottleneck_bw);
  };
  if (fidelity == config::Fidelity::FUSED) {
    sg4::this_actor::sleep_for(phase.latency);
    round(volume);
  } else {
    for (int s = 0; s < steps; ++s) {
      sg4::this_actor::sleep_for(phase.latency / steps);
      round(volume / steps);
    }
  }
}

}  // namespace ddpsim::network
