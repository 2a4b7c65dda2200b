#include "network/flow.hpp"

#include <cmath>
#include <simgrid/s4u.hpp>
#include <string>

namespace sg4 = simgrid::s4u;

namespace ddpsim::network {

// `all`: one actor per hop, each issuing its own flow when the phase's actor releases it.
struct FlowBackend::HopActors {
  std::vector<sg4::SemaphorePtr> start;
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
  uint64_t size = 0;
  size_t remaining = 0;
};

void FlowBackend::configure(sg4::Engine& e) {
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

namespace {

// A flow endpoint with its own transmit (up) and receive (down) link in the star zone.
sg4::Host* endpoint(sg4::NetZone* zone, const std::string& name, double tx_bw, double rx_bw) {
  sg4::Host* h = zone->create_host(name, 1.0)->seal();
  sg4::Link* tx = zone->create_link(name + "-tx", tx_bw)->set_latency(0)->seal();
  sg4::Link* rx = zone->create_link(name + "-rx", rx_bw)->set_latency(0)->seal();
  zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(tx)}, false);
  zone->add_route(nullptr, h->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(rx)}, false);
  return h;
}

}  // namespace

FlowBackend::FlowBackend(sg4::NetZone* zone, const config::ClusterSpec& c, const collectives::RingPlan& ring,
                         config::Fidelity fidelity, config::RankMode ranks)
    : ring_(ring), fidelity_(fidelity) {
  const int n = ring_.nranks;
  if (n <= 1) return;
  if (ranks == config::RankMode::REPRESENTATIVE) {
    // One endpoint pair per hop class; the links take the class's hop bandwidth.
    const collectives::Hop* intra = nullptr;
    const collectives::Hop* inter = nullptr;
    for (const auto& h : ring_.hops) (h.inter_node ? inter : intra) = &h;
    if (intra)
      routes_.push_back({endpoint(zone, "intra-src", intra->bandwidth, intra->bandwidth),
                         endpoint(zone, "intra-dst", intra->bandwidth, intra->bandwidth)});
    if (inter)
      routes_.push_back({endpoint(zone, "inter-src", inter->bandwidth, inter->bandwidth),
                         endpoint(zone, "inter-dst", inter->bandwidth, inter->bandwidth)});
    return;
  }
  // Every hop: per-GPU port endpoints for intra-node hops, per-node NIC endpoints between nodes.
  std::vector<sg4::Host*> gpu(static_cast<size_t>(n), nullptr), nic(static_cast<size_t>(c.nodes), nullptr);
  auto gpu_ep = [&](int g, double bw) -> sg4::Host* {
    auto& h = gpu[static_cast<size_t>(g)];
    if (!h) h = endpoint(zone, "gpu" + std::to_string(g), bw, bw);
    return h;
  };
  auto nic_ep = [&](int node, double bw) -> sg4::Host* {
    auto& h = nic[static_cast<size_t>(node)];
    if (!h) h = endpoint(zone, "node" + std::to_string(node) + "-nic", bw, bw);
    return h;
  };
  for (const auto& h : ring_.hops) {
    if (h.inter_node)
      routes_.push_back({nic_ep(h.src / c.gpus_per_node, h.bandwidth), nic_ep(h.dst / c.gpus_per_node, h.bandwidth)});
    else
      routes_.push_back({gpu_ep(h.src, h.bandwidth), gpu_ep(h.dst, h.bandwidth)});
  }
  actors_ = std::make_unique<HopActors>();
  for (size_t i = 0; i < routes_.size(); ++i) {
    actors_->start.push_back(sg4::Semaphore::create(0));
    HopActors* a = actors_.get();
    const Route r = routes_[i];
    sg4::Actor::create("hop-" + std::to_string(i), r.src, [a, i, r] {
      while (true) {
        a->start[i]->acquire();
        sg4::Comm::sendto(r.src, r.dst, a->size);
        if (--a->remaining == 0) a->done->release();
      }
    })->daemonize();
  }
}

FlowBackend::~FlowBackend() = default;

void FlowBackend::round(double bytes) {
  if (bytes <= 0) return;
  // Flows carry whole bytes; the fraction of a byte left over is added as its transfer time so
  // that the uncontended phase time is exact.
  const double whole = std::floor(bytes);
  const auto size = static_cast<uint64_t>(whole);
  if (size > 0) {
    flows_ += routes_.size();
    if (actors_) {
      actors_->size = size;
      actors_->remaining = routes_.size();
      for (auto& s : actors_->start) s->release();
      actors_->done->acquire();
    } else {
      std::vector<sg4::CommPtr> comms;
      comms.reserve(routes_.size());
      for (const auto& r : routes_) comms.push_back(sg4::Comm::sendto_async(r.src, r.dst, size));
      sg4::Comm::wait_all(comms);
    }
  }
  if (bytes > whole) sg4::this_actor::sleep_for((bytes - whole) / ring_.bottleneck_bw);
}

void FlowBackend::run_phase(Clock& clock, const Phase& phase) {
  clock.sleep_for(phase.start_latency);
  const int n = ring_.nranks;
  if (n <= 1) return;
  const double volume = phase.timing.transfer * ring_.bottleneck_bw;
  const int steps = n - 1;
  if (fidelity_ == config::Fidelity::FUSED) {
    clock.sleep_for(phase.timing.latency);
    round(volume);
  } else {
    for (int s = 0; s < steps; ++s) {
      clock.sleep_for(phase.timing.latency / steps);
      round(volume / steps);
    }
  }
}

}  // namespace ddpsim::network
