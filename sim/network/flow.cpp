#include "network/flow.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>

#include "fabric/fabric.hpp"
#include "fabric/rings.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::network {

// `all`: one actor per hop, each issuing its own flow when the phase's actor releases it. One set
// per phase in flight: collectives on several NCCL streams run phases at the same time.
struct FlowBackend::HopActors {
  std::vector<sg4::SemaphorePtr> start;
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
  uint64_t size = 0;
  size_t remaining = 0;
  bool busy = false;
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
                         config::Fidelity fidelity, config::RankMode ranks, int cross_nic, int p2p_gpus,
                         double p2p_bandwidth)
    : ring_(ring), fidelity_(fidelity) {
  for (int g = 0; g < p2p_gpus; ++g)
    p2p_.push_back(endpoint(zone, "p2p-gpu" + std::to_string(g), p2p_bandwidth, p2p_bandwidth));
  const int n = ring_.nranks;
  if (n <= 1) return;
  if (!c.inter_fabric.is_single_switch() && c.nodes > 1 && c.inter_link) {
    build_fabric(zone, c, ranks, cross_nic);
    return;
  }
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
  every_hop_ = true;
}

void FlowBackend::transfer(Clock& clock, int src, int dst, double bytes, double rate) {
  if (bytes <= 0) return;
  if (src < 0 || dst < 0 || src >= static_cast<int>(p2p_.size()) || dst >= static_cast<int>(p2p_.size()) ||
      src == dst) {
    Backend::transfer(clock, src, dst, bytes, rate);
    return;
  }
  // The ports carry the pair's bandwidth (constructor), so `rate` is not set on the flow: SimGrid
  // 3.32 refuses Comm::set_rate on a host-to-host communication.
  (void)rate;
  sg4::Comm::sendto(p2p_[static_cast<size_t>(src)], p2p_[static_cast<size_t>(dst)],
                    static_cast<uint64_t>(std::llround(bytes)));
  ++flows_;
}

FlowBackend::HopActors& FlowBackend::free_hop_actors() {
  for (auto& a : actor_sets_)
    if (!a->busy) return *a;
  actor_sets_.push_back(std::make_unique<HopActors>());
  HopActors* a = actor_sets_.back().get();
  for (size_t i = 0; i < routes_.size(); ++i) {
    a->start.push_back(sg4::Semaphore::create(0));
    const Route r = routes_[i];
    sg4::Actor::create("hop-" + std::to_string(i), r.src, [a, i, r] {
      while (true) {
        a->start[i]->acquire();
        sg4::Comm::sendto(r.src, r.dst, a->size);
        if (--a->remaining == 0) a->done->release();
      }
    })->daemonize();
  }
  return *a;
}

// ------------------------------------------------------------------ fabric mode

// Fabric-mode flows carry bytes x kByteScale on links of capacity x kByteScale: the same times,
// with flow sizes rounded to 2^-20 byte instead of one byte (so the 1:1 fat-tree equals the
// single switch to rounding).
constexpr double kByteScale = 1048576.0;

struct FlowBackend::FabricState {
  std::unique_ptr<fabric::Fabric> fabric;
  std::vector<double> capacity;                    // per fabric link, after background load
  std::vector<double> bytes;                       // per fabric link, carried so far
  std::vector<int> used;                           // flows of the job on each fabric link
  std::vector<std::pair<int, double>> path_links;  // (fabric link, flows the entry stands for)
  // Per-flow actors (every flow simulated): one set per round in flight, so that concurrent
  // collectives (several NCCL streams) each get their own and run at the same time.
  struct ActorSet {
    std::vector<sg4::SemaphorePtr> start;
    sg4::SemaphorePtr done;
    std::vector<uint64_t> sizes;
    size_t remaining = 0;
  };
  std::vector<std::unique_ptr<ActorSet>> sets;
  std::vector<ActorSet*> idle;
  bool actors = false;
};

void FlowBackend::build_fabric(sg4::NetZone* zone, const config::ClusterSpec& c, config::RankMode ranks,
                               int cross_nic) {
  using fabric::LinkClass;
  fab_ = std::make_unique<FabricState>();
  const auto& fs = c.inter_fabric;
  const int k = std::max(c.nics_per_node, 1);
  fab_->fabric =
      std::make_unique<fabric::Fabric>(fs, fabric::Fabric::servers_for(fs, c.nodes, k), k, c.inter_link->bandwidth);
  const fabric::Fabric& F = *fab_->fabric;
  const auto flows = fabric::ring_flows(F, F.place(c.nodes), c.nodes, cross_nic, fs.flows_per_nic);
  const size_t nl = F.links().size();
  fab_->capacity.resize(nl);
  fab_->bytes.assign(nl, 0.0);
  fab_->used.assign(nl, 0);
  for (size_t l = 0; l < nl; ++l) {
    const auto cls = F.links()[l].cls;
    const bool upper = cls != LinkClass::NIC_UP && cls != LinkClass::NIC_DOWN;
    fab_->capacity[l] = F.links()[l].bandwidth * (upper ? 1.0 - fs.background_load : 1.0);
  }
  // Each (NIC flow, port path) is one flow of the job.
  struct Sub {
    const std::vector<int>* links;
    double share;
  };
  std::vector<Sub> subs;
  int max_switches = 1;
  for (const auto& fl : flows)
    for (const auto& p : fl.paths) {
      subs.push_back({&p.links, fl.share * p.share});
      for (int l : p.links) ++fab_->used[static_cast<size_t>(l)];
      max_switches = std::max(max_switches, p.switches);
    }
  // Switches beyond the first add their latency to every inter-node ring step of a phase.
  extra_phase_latency_ = (c.nodes - 1) * (max_switches - 1) * fs.switch_latency;

  // Intra-node hops as before (one representative class, or every hop), at scaled capacities.
  const int n = ring_.nranks;
  const collectives::Hop* intra = nullptr;
  for (const auto& h : ring_.hops)
    if (!h.inter_node) intra = &h;
  if (intra && ranks == config::RankMode::REPRESENTATIVE) {
    const double bw = intra->bandwidth * kByteScale;
    ffl_.push_back({endpoint(zone, "intra-src", bw, bw), endpoint(zone, "intra-dst", bw, bw), 1.0, 1.0, 0, 0});
  } else if (intra) {
    std::vector<sg4::Host*> gpu(static_cast<size_t>(n), nullptr);
    auto gpu_ep = [&](int g, double bw) -> sg4::Host* {
      auto& h = gpu[static_cast<size_t>(g)];
      if (!h) h = endpoint(zone, "gpu" + std::to_string(g), bw * kByteScale, bw * kByteScale);
      return h;
    };
    for (const auto& h : ring_.hops)
      if (!h.inter_node) ffl_.push_back({gpu_ep(h.src, h.bandwidth), gpu_ep(h.dst, h.bandwidth), 1.0, 1.0, 0, 0});
  }

  sg4::Host* sink = zone->create_host("fabric-sink", 1.0)->seal();
  zone->add_route(nullptr, sink->get_netpoint(), nullptr, nullptr, {}, false);

  // Representative classes: the multiset of per-link shares (capacity / flows) and the byte share.
  bool rep = ranks == config::RankMode::REPRESENTATIVE;
  std::vector<int> cls_of(subs.size(), 0);
  std::map<std::vector<double>, int> classes;
  if (rep) {
    std::vector<int> link_cls(nl, -1);
    for (size_t i = 0; i < subs.size() && rep; ++i) {
      std::vector<double> sig;
      for (int l : *subs[i].links)
        sig.push_back(fab_->capacity[static_cast<size_t>(l)] / fab_->used[static_cast<size_t>(l)]);
      std::sort(sig.begin(), sig.end());
      sig.push_back(subs[i].share);
      const int id = classes.emplace(sig, static_cast<int>(classes.size())).first->second;
      cls_of[i] = id;
      for (int l : *subs[i].links) {
        int& lc = link_cls[static_cast<size_t>(l)];
        if (lc == -1) lc = id;
        if (lc != id) rep = false;
      }
    }
  }
  fabric_rep_ = rep;
  if (rep) {
    // One flow per class on one link of the class's smallest per-flow share; statistics count
    // each fabric link once with its flow count.
    std::vector<std::vector<int>> members(classes.size());
    for (size_t i = 0; i < subs.size(); ++i) members[static_cast<size_t>(cls_of[i])].push_back(static_cast<int>(i));
    std::vector<char> seen(nl, 0);
    for (size_t k2 = 0; k2 < members.size(); ++k2) {
      const auto& m = members[k2];
      double rate = std::numeric_limits<double>::infinity();
      FabricFlow f;
      f.first_link = static_cast<int>(fab_->path_links.size());
      for (int i : m)
        for (int l : *subs[static_cast<size_t>(i)].links) {
          rate = std::min(rate, fab_->capacity[static_cast<size_t>(l)] / fab_->used[static_cast<size_t>(l)]);
          if (!seen[static_cast<size_t>(l)]) {
            seen[static_cast<size_t>(l)] = 1;
            fab_->path_links.emplace_back(l, fab_->used[static_cast<size_t>(l)]);
          }
        }
      f.nlinks = static_cast<int>(fab_->path_links.size()) - f.first_link;
      const std::string name = "class" + std::to_string(k2);
      f.src = zone->create_host(name, 1.0)->seal();
      sg4::Link* link = zone->create_link(name + "-link", rate * kByteScale)->set_latency(0)->seal();
      zone->add_route(f.src->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)}, false);
      f.dst = sink;
      f.share = subs[static_cast<size_t>(m[0])].share;
      f.weight = static_cast<double>(m.size());
      ffl_.push_back(f);
    }
  } else {
    std::unordered_map<int, sg4::Link*> made;
    auto link_of = [&](int l) {
      auto it = made.find(l);
      if (it != made.end()) return it->second;
      sg4::Link* sl = zone->create_link("fl" + std::to_string(l), fab_->capacity[static_cast<size_t>(l)] * kByteScale)
                          ->set_latency(0)
                          ->seal();
      made.emplace(l, sl);
      return sl;
    };
    for (size_t i = 0; i < subs.size(); ++i) {
      FabricFlow f;
      f.first_link = static_cast<int>(fab_->path_links.size());
      std::vector<sg4::LinkInRoute> route;
      for (int l : *subs[i].links) {
        route.emplace_back(link_of(l));
        fab_->path_links.emplace_back(l, 1.0);
      }
      f.nlinks = static_cast<int>(subs[i].links->size());
      f.src = zone->create_host("flow" + std::to_string(i), 1.0)->seal();
      zone->add_route(f.src->get_netpoint(), nullptr, nullptr, nullptr, route, false);
      f.dst = sink;
      f.share = subs[i].share;
      ffl_.push_back(f);
    }
  }
  // Every flow from its own actor unless the flows are a handful of classes.
  fab_->actors = !rep || ffl_.size() > 16;
}

namespace {

FlowBackend::FabricState::ActorSet* make_set(std::vector<std::unique_ptr<FlowBackend::FabricState::ActorSet>>& sets,
                                             const std::vector<sg4::Host*>& src, const std::vector<sg4::Host*>& dst) {
  auto set = std::make_unique<FlowBackend::FabricState::ActorSet>();
  auto* st = set.get();
  st->done = sg4::Semaphore::create(0);
  st->sizes.assign(src.size(), 0);
  const std::string tag = "fabric-flow-" + std::to_string(sets.size()) + "-";
  for (size_t i = 0; i < src.size(); ++i) {
    st->start.push_back(sg4::Semaphore::create(0));
    sg4::Host* s = src[i];
    sg4::Host* d = dst[i];
    sg4::Actor::create(tag + std::to_string(i), s, [st, i, s, d] {
      while (true) {
        st->start[i]->acquire();
        if (st->sizes[i] > 0) sg4::Comm::sendto(s, d, st->sizes[i]);
        if (--st->remaining == 0) st->done->release();
      }
    })->daemonize();
  }
  sets.push_back(std::move(set));
  return st;
}

}  // namespace

void FlowBackend::round_fabric(double bytes) {
  if (bytes <= 0) return;
  FabricState& st = *fab_;
  std::vector<uint64_t> sizes(ffl_.size());
  for (size_t i = 0; i < ffl_.size(); ++i) {
    const double b = bytes * ffl_[i].share;
    sizes[i] = static_cast<uint64_t>(std::llround(b * kByteScale));
    const auto& f = ffl_[i];
    for (int e = f.first_link; e < f.first_link + f.nlinks; ++e) {
      const auto& [l, mult] = st.path_links[static_cast<size_t>(e)];
      st.bytes[static_cast<size_t>(l)] += b * mult;
    }
  }
  flows_ += ffl_.size();
  if (st.actors) {
    FabricState::ActorSet* set = nullptr;
    if (st.idle.empty()) {
      std::vector<sg4::Host*> src, dst;
      for (const auto& f : ffl_) {
        src.push_back(f.src);
        dst.push_back(f.dst);
      }
      set = make_set(st.sets, src, dst);
    } else {
      set = st.idle.back();
      st.idle.pop_back();
    }
    set->sizes = std::move(sizes);
    set->remaining = ffl_.size();
    for (auto& s : set->start) s->release();
    set->done->acquire();
    st.idle.push_back(set);
  } else {
    std::vector<sg4::CommPtr> comms;
    comms.reserve(ffl_.size());
    for (size_t i = 0; i < ffl_.size(); ++i)
      if (sizes[i] > 0) comms.push_back(sg4::Comm::sendto_async(ffl_[i].src, ffl_[i].dst, sizes[i]));
    sg4::Comm::wait_all(comms);
  }
}

std::vector<FlowBackend::LinkLoad> FlowBackend::link_loads() const {
  std::vector<LinkLoad> out;
  if (!fab_) return out;
  const auto& F = *fab_->fabric;
  for (size_t l = 0; l < F.links().size(); ++l)
    if (fab_->used[l] > 0)
      out.push_back(
          {F.link_name(static_cast<int>(l)), fabric::to_string(F.links()[l].cls), fab_->capacity[l], fab_->bytes[l]});
  return out;
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
    if (every_hop_) {
      HopActors& a = free_hop_actors();
      a.busy = true;
      a.size = size;
      a.remaining = routes_.size();
      for (auto& s : a.start) s->release();
      a.done->acquire();
      a.busy = false;
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
    clock.sleep_for(phase.timing.latency + extra_phase_latency_);
    fab_ ? round_fabric(volume) : round(volume);
  } else {
    for (int s = 0; s < steps; ++s) {
      clock.sleep_for((phase.timing.latency + extra_phase_latency_) / steps);
      fab_ ? round_fabric(volume / steps) : round(volume / steps);
    }
  }
}

}  // namespace ddpsim::network
