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

// A flow in flight while the --trace timeline is recorded: the bytes it had left at the last
// time step (simulated units) and the payload bytes one simulated byte stands for.
struct FlowBackend::Live {
  sg4::CommPtr comm;
  double prev = 0;
  double scale = 0;
  int flow = 0;
  size_t slot = 0;
};

// `all`: one actor per hop, each issuing its own flow when the phase's actor releases it. One set
// per phase in flight: collectives on several NCCL streams run phases at the same time.
struct FlowBackend::HopActors {
  std::vector<sg4::SemaphorePtr> start;
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
  uint64_t size = 0;
  double payload = 0;
  bool counted = false;
  size_t remaining = 0;
  bool busy = false;
};

// Fabric-mode flows carry bytes x kByteScale on links of capacity x kByteScale: the same times,
// with flow sizes rounded to 2^-20 byte instead of one byte (so the 1:1 fat-tree equals the
// single switch to rounding).
constexpr double kByteScale = 1048576.0;

struct FlowBackend::FabricState {
  std::unique_ptr<fabric::Fabric> fabric;
  std::vector<double> capacity;  // per fabric link, after background load
  std::vector<int> used;         // flows of the job on each fabric link
  // Per-flow actors (every flow simulated): one set per round in flight, so that concurrent
  // collectives (several NCCL streams) each get their own and run at the same time.
  struct ActorSet {
    std::vector<sg4::SemaphorePtr> start;
    sg4::SemaphorePtr done;
    std::vector<uint64_t> sizes;
    std::vector<double> payloads;  // per flow, bytes of payload it stands for
    bool counted = false;
    size_t remaining = 0;
    // The sink's receiver takes the finished comms of the flows in `to_drain` out of their
    // mailboxes when released.
    std::vector<simgrid::s4u::Mailbox*> mailboxes;
    simgrid::s4u::SemaphorePtr drain;
    std::vector<size_t> to_drain;
  };
  std::vector<std::unique_ptr<ActorSet>> sets;
  std::vector<ActorSet*> idle;
  bool actors = false;
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

// ------------------------------------------------------------------ link statistics

void FlowBackend::add_classes(const config::ClusterSpec& c, bool fabric) {
  using fabric::LinkClass;
  intra_out_ = ledger_.add_class(intra_port_class(c, true));
  intra_in_ = ledger_.add_class(intra_port_class(c, false));
  // Along a path: up from the NIC, over the tiers, down to the NIC.
  nic_up_ = ledger_.add_class(fabric::to_string(LinkClass::NIC_UP));
  if (fabric) {
    class_of_[static_cast<int>(LinkClass::NIC_UP)] = nic_up_;
    for (LinkClass k : {LinkClass::LEAF_UP, LinkClass::SPINE_UP, LinkClass::CORE_DOWN, LinkClass::SPINE_DOWN})
      class_of_[static_cast<int>(k)] = ledger_.add_class(fabric::to_string(k));
  }
  nic_down_ = ledger_.add_class(fabric::to_string(LinkClass::NIC_DOWN));
  class_of_[static_cast<int>(LinkClass::NIC_DOWN)] = nic_down_;
}

int FlowBackend::named_link(int cls, double capacity, long long count, std::string name) {
  names_.push_back(std::move(name));
  return ledger_.add_link(cls, capacity, count, -static_cast<long long>(names_.size()));
}

void FlowBackend::close_flow(int first) {
  FlowLinks fl;
  fl.first = first;
  fl.n = static_cast<int>(path_.size()) - first;
  fl.cls_first = static_cast<int>(flow_classes_.size());
  if (timeline_) {
    for (int e = fl.first; e < fl.first + fl.n; ++e) {
      const auto [link, mult] = path_[static_cast<size_t>(e)];
      const int cls = ledger_.class_of(link);
      const double w = mult * static_cast<double>(ledger_.count(link));
      bool merged = false;
      for (size_t k = static_cast<size_t>(fl.cls_first); k < flow_classes_.size(); ++k)
        if (flow_classes_[k].first == cls) {
          flow_classes_[k].second += w;
          merged = true;
        }
      if (!merged) flow_classes_.emplace_back(cls, w);
    }
  }
  fl.cls_n = static_cast<int>(flow_classes_.size()) - fl.cls_first;
  flow_links_.push_back(fl);
}

void FlowBackend::flow_started(int flow, double payload, double t) {
  const FlowLinks& fl = flow_links_[static_cast<size_t>(flow)];
  for (int e = fl.first; e < fl.first + fl.n; ++e) {
    const auto [link, mult] = path_[static_cast<size_t>(e)];
    ledger_.add_bytes(link, payload * mult);
    ledger_.start(link, t);
  }
}

void FlowBackend::flow_ended(int flow, double t) {
  const FlowLinks& fl = flow_links_[static_cast<size_t>(flow)];
  for (int e = fl.first; e < fl.first + fl.n; ++e) ledger_.end(path_[static_cast<size_t>(e)].first, t);
}

void FlowBackend::wait_each(std::vector<sg4::CommPtr>& comms, std::vector<int>& index, std::vector<Live>& live,
                            bool counted) {
  while (!comms.empty()) {
    const auto k = static_cast<size_t>(sg4::Comm::wait_any(comms));
    const int i = index[k];
    flow_done(i, timeline_ ? &live[static_cast<size_t>(i)] : nullptr, counted);
    comms.erase(comms.begin() + static_cast<long>(k));
    index.erase(index.begin() + static_cast<long>(k));
  }
}

void FlowBackend::live_begin(Live& l) {
  l.slot = live_.size();
  l.prev = l.comm->get_remaining();
  live_.push_back(&l);
}

void FlowBackend::live_end(Live& l) {
  // Bytes the last time step did not see (none when SimGrid had already zeroed the remainder).
  if (l.prev > 0) {
    const FlowLinks& fl = flow_links_[static_cast<size_t>(l.flow)];
    for (int k = fl.cls_first; k < fl.cls_first + fl.cls_n; ++k) {
      const auto [cls, w] = flow_classes_[static_cast<size_t>(k)];
      tracks_[static_cast<size_t>(cls)].add_late(l.prev * l.scale * w);
    }
  }
  Live* last = live_.back();
  live_[l.slot] = last;
  last->slot = l.slot;
  live_.pop_back();
}

void FlowBackend::on_advance(double delta) {
  if (delta <= 0) return;
  const double now = sg4::Engine::get_clock();
  std::fill(acc_.begin(), acc_.end(), 0.0);
  for (Live* l : live_) {
    const double r = std::max(0.0, l->comm->get_remaining());
    const double moved = (l->prev - r) * l->scale;
    l->prev = r;
    if (moved == 0) continue;
    const FlowLinks& fl = flow_links_[static_cast<size_t>(l->flow)];
    for (int k = fl.cls_first; k < fl.cls_first + fl.cls_n; ++k) {
      const auto [cls, w] = flow_classes_[static_cast<size_t>(k)];
      acc_[static_cast<size_t>(cls)] += moved * w;
    }
  }
  for (size_t c = 0; c < tracks_.size(); ++c) tracks_[c].add(now - delta, now, acc_[c]);
}

void FlowBackend::flow_done(int flow, Live* l, bool counted) {
  if (recording_) ends_[static_cast<size_t>(flow)] = sg4::Engine::get_clock();
  if (l) live_end(*l);
  if (counted) flow_ended(flow, sg4::Engine::get_clock());
}

std::vector<LinkClassTotals> FlowBackend::link_totals() const {
  const fabric::Fabric* f = fab_ ? fab_->fabric.get() : nullptr;
  return ledger_.totals(
      [&](long long key) {
        return key < 0 ? names_[static_cast<size_t>(-key - 1)] : f->link_name(static_cast<int>(key));
      },
      true);
}

std::string FlowBackend::links_note() const {
  // The same words for representative classes and every flow: the figures are equal.
  return fab_ ? "flow backend; capacities are the links' own (background load not counted)"
              : "flow backend; single switch: a node's NICs are one link";
}

std::vector<LinkCounterTrack> FlowBackend::link_counters() const {
  std::vector<LinkCounterTrack> out;
  if (!timeline_) return out;
  for (size_t c = 0; c < tracks_.size(); ++c) {
    if (ledger_.class_capacity(static_cast<int>(c)) <= 0) continue;  // no links of this class
    out.push_back(tracks_[c].track(ledger_.class_names()[c]));
  }
  return out;
}

// ------------------------------------------------------------------ construction

FlowBackend::FlowBackend(sg4::NetZone* zone, const config::ClusterSpec& c, const collectives::RingPlan& ring,
                         config::Fidelity fidelity, config::RankMode ranks, int cross_nic, bool link_timeline,
                         int p2p_gpus, double p2p_bandwidth, bool serial)
    : timeline_(link_timeline), ring_(ring), fidelity_(fidelity), serial_(serial) {
  for (int g = 0; g < p2p_gpus; ++g)
    p2p_.push_back(endpoint(zone, "p2p-gpu" + std::to_string(g), p2p_bandwidth, p2p_bandwidth));
  const int n = ring_.nranks;
  if (n <= 1) return;
  const bool fabric = !c.inter_fabric.is_single_switch() && c.nodes > 1 && c.inter_link;
  add_classes(c, fabric);
  if (fabric) {
    build_fabric(zone, c, ranks, cross_nic);
  } else {
    const std::string intra = config::to_string(c.fabric);
    auto out_name = [&](int g) { return "gpu" + std::to_string(g) + ">" + intra; };
    auto in_name = [&](int g) { return intra + ">gpu" + std::to_string(g); };
    auto nic_up = [&](int node) { return "node" + std::to_string(node) + ".nics>switch"; };
    auto nic_down = [&](int node) { return "switch>node" + std::to_string(node) + ".nics"; };
    if (ranks == config::RankMode::REPRESENTATIVE) {
      // One endpoint pair per hop class; the links take the class's hop bandwidth, and the
      // class's first hop names the links it stands for.
      const auto [intra_hop, inter_hop, n_intra, n_inter] = hop_classes(ring_);
      if (intra_hop) {
        routes_.push_back({endpoint(zone, "intra-src", intra_hop->bandwidth, intra_hop->bandwidth),
                           endpoint(zone, "intra-dst", intra_hop->bandwidth, intra_hop->bandwidth)});
        const int first = static_cast<int>(path_.size());
        path_.emplace_back(named_link(intra_out_, intra_hop->bandwidth, n_intra, out_name(intra_hop->src)), 1.0);
        path_.emplace_back(named_link(intra_in_, intra_hop->bandwidth, n_intra, in_name(intra_hop->dst)), 1.0);
        close_flow(first);
      }
      if (inter_hop) {
        routes_.push_back({endpoint(zone, "inter-src", inter_hop->bandwidth, inter_hop->bandwidth),
                           endpoint(zone, "inter-dst", inter_hop->bandwidth, inter_hop->bandwidth)});
        const int first = static_cast<int>(path_.size());
        path_.emplace_back(named_link(nic_up_, inter_hop->bandwidth, n_inter, nic_up(inter_hop->src / c.gpus_per_node)),
                           1.0);
        path_.emplace_back(
            named_link(nic_down_, inter_hop->bandwidth, n_inter, nic_down(inter_hop->dst / c.gpus_per_node)), 1.0);
        close_flow(first);
      }
    } else {
      // Every hop: per-GPU port endpoints for intra-node hops, per-node NIC endpoints between nodes.
      struct Ep {
        sg4::Host* host = nullptr;
        int tx = -1, rx = -1;  // ledger links
      };
      std::vector<Ep> gpu(static_cast<size_t>(n)), nic(static_cast<size_t>(c.nodes));
      // Ledger links as a direction is first used (a GPU whose incoming hop is the NIC's has no
      // port-in link of its own, as in the representative classes).
      auto gpu_ep = [&](int g, double bw) -> Ep& {
        auto& e = gpu[static_cast<size_t>(g)];
        if (!e.host) e.host = endpoint(zone, "gpu" + std::to_string(g), bw, bw);
        return e;
      };
      auto nic_ep = [&](int node, double bw) -> Ep& {
        auto& e = nic[static_cast<size_t>(node)];
        if (!e.host) e.host = endpoint(zone, "node" + std::to_string(node) + "-nic", bw, bw);
        return e;
      };
      for (const auto& h : ring_.hops) {
        const int first = static_cast<int>(path_.size());
        const int sn = h.src / c.gpus_per_node, dn = h.dst / c.gpus_per_node;
        Ep& s = h.inter_node ? nic_ep(sn, h.bandwidth) : gpu_ep(h.src, h.bandwidth);
        if (s.tx < 0)
          s.tx = h.inter_node ? named_link(nic_up_, h.bandwidth, 1, nic_up(sn))
                              : named_link(intra_out_, h.bandwidth, 1, out_name(h.src));
        Ep& d = h.inter_node ? nic_ep(dn, h.bandwidth) : gpu_ep(h.dst, h.bandwidth);
        if (d.rx < 0)
          d.rx = h.inter_node ? named_link(nic_down_, h.bandwidth, 1, nic_down(dn))
                              : named_link(intra_in_, h.bandwidth, 1, in_name(h.dst));
        routes_.push_back({s.host, d.host});
        path_.emplace_back(s.tx, 1.0);
        path_.emplace_back(d.rx, 1.0);
        close_flow(first);
      }
      every_hop_ = true;
    }
  }
  if (timeline_) {
    for (size_t k = 0; k < ledger_.class_names().size(); ++k)
      tracks_.emplace_back(ledger_.class_capacity(static_cast<int>(k)));
    acc_.assign(tracks_.size(), 0.0);
    // SimGrid's time steps feed the link timeline. Its signal outlives the backend (and has no
    // way to disconnect), so the callback holds a slot the backend clears when it goes.
    auto slot = std::make_shared<FlowBackend*>(this);
    advance_slot_ = slot;
    sg4::Engine::on_time_advance_cb([slot](double delta) {
      if (*slot) (*slot)->on_advance(delta);
    });
  }
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

size_t FlowBackend::actors_per_round() const {
  // A pool of per-flow actors (and a fabric's sink) per round in flight, when flows have actors.
  if (fab_) return fab_->actors ? ffl_.size() + 1 : 0;
  return routes_.size();
}

FlowBackend::HopActors& FlowBackend::free_hop_actors() {
  for (auto& a : actor_sets_)
    if (!a->busy) return *a;
  actor_sets_.push_back(std::make_unique<HopActors>());
  HopActors* a = actor_sets_.back().get();
  for (size_t i = 0; i < routes_.size(); ++i) {
    a->start.push_back(sg4::Semaphore::create(0));
    const Route r = routes_[i];
    sg4::Actor::create("hop-" + std::to_string(i), r.src, [this, a, i, r] {
      while (true) {
        a->start[i]->acquire();
        const int flow = static_cast<int>(i);
        if (timeline_) {
          Live l;
          l.comm = sg4::Comm::sendto_async(r.src, r.dst, a->size);
          l.scale = a->payload / static_cast<double>(a->size);
          l.flow = flow;
          live_begin(l);
          l.comm->wait();
          flow_done(flow, &l, a->counted);
        } else {
          sg4::Comm::sendto(r.src, r.dst, a->size);
          flow_done(flow, nullptr, a->counted);
        }
        if (--a->remaining == 0) a->done->release();
      }
    })->daemonize();
  }
  return *a;
}

// ------------------------------------------------------------------ fabric mode

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
  // A ledger link per fabric link the job uses (capacity: the link's, without background load).
  std::vector<int> lid(nl, -1);
  for (size_t l = 0; l < nl; ++l)
    if (fab_->used[l] > 0)
      lid[l] = ledger_.add_link(class_of_[static_cast<int>(F.links()[l].cls)], F.links()[l].bandwidth, 1,
                                static_cast<long long>(l));

  // Intra-node hops as before (one representative class, or every hop), at scaled capacities.
  const int n = ring_.nranks;
  const std::string intra_name = config::to_string(c.fabric);
  auto out_name = [&](int g) { return "gpu" + std::to_string(g) + ">" + intra_name; };
  auto in_name = [&](int g) { return intra_name + ">gpu" + std::to_string(g); };
  const collectives::Hop* intra = nullptr;
  long long n_intra = 0;
  for (const auto& h : ring_.hops)
    if (!h.inter_node) {
      if (!intra) intra = &h;
      ++n_intra;
    }
  // Every fabric-mode flow, intra-node ones too, leaves its own host through its path's links
  // (the up list) towards one sink with an empty down list: the per-flow actors can then all
  // send to one receiver on the sink (make_set).
  sg4::Host* sink = zone->create_host("fabric-sink", 1.0)->seal();
  zone->add_route(nullptr, sink->get_netpoint(), nullptr, nullptr, {}, false);
  auto flow_host = [&](const std::string& name, const std::vector<sg4::Link*>& links) {
    sg4::Host* h = zone->create_host(name, 1.0)->seal();
    std::vector<sg4::LinkInRoute> route;
    for (sg4::Link* l : links) route.emplace_back(l);
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, false);
    return h;
  };
  auto port = [&](const std::string& name, double bw) {
    return zone->create_link(name, bw * kByteScale)->set_latency(0)->seal();
  };
  if (intra && ranks == config::RankMode::REPRESENTATIVE) {
    ffl_.push_back({flow_host("intra-flow", {port("intra-tx", intra->bandwidth), port("intra-rx", intra->bandwidth)}),
                    sink, 1.0, 1.0});
    const int first = static_cast<int>(path_.size());
    path_.emplace_back(named_link(intra_out_, intra->bandwidth, n_intra, out_name(intra->src)), 1.0);
    path_.emplace_back(named_link(intra_in_, intra->bandwidth, n_intra, in_name(intra->dst)), 1.0);
    close_flow(first);
  } else if (intra) {
    struct Port {
      sg4::Link* tx = nullptr;
      sg4::Link* rx = nullptr;
      int tx_id = -1, rx_id = -1;  // ledger links
    };
    std::vector<Port> gpu(static_cast<size_t>(n));
    int k = 0;
    for (const auto& h : ring_.hops)
      if (!h.inter_node) {
        Port& s = gpu[static_cast<size_t>(h.src)];
        if (!s.tx) {
          s.tx = port("gpu" + std::to_string(h.src) + "-tx", h.bandwidth);
          s.tx_id = named_link(intra_out_, h.bandwidth, 1, out_name(h.src));
        }
        Port& d = gpu[static_cast<size_t>(h.dst)];
        if (!d.rx) {
          d.rx = port("gpu" + std::to_string(h.dst) + "-rx", h.bandwidth);
          d.rx_id = named_link(intra_in_, h.bandwidth, 1, in_name(h.dst));
        }
        ffl_.push_back({flow_host("intra-flow" + std::to_string(k++), {s.tx, d.rx}), sink, 1.0, 1.0});
        const int first = static_cast<int>(path_.size());
        path_.emplace_back(s.tx_id, 1.0);
        path_.emplace_back(d.rx_id, 1.0);
        close_flow(first);
      }
  }

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
      const int first = static_cast<int>(path_.size());
      for (int i : m)
        for (int l : *subs[static_cast<size_t>(i)].links) {
          rate = std::min(rate, fab_->capacity[static_cast<size_t>(l)] / fab_->used[static_cast<size_t>(l)]);
          if (!seen[static_cast<size_t>(l)]) {
            seen[static_cast<size_t>(l)] = 1;
            path_.emplace_back(lid[static_cast<size_t>(l)], fab_->used[static_cast<size_t>(l)]);
          }
        }
      const std::string name = "class" + std::to_string(k2);
      f.src = zone->create_host(name, 1.0)->seal();
      sg4::Link* link = zone->create_link(name + "-link", rate * kByteScale)->set_latency(0)->seal();
      zone->add_route(f.src->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link)}, false);
      f.dst = sink;
      f.share = subs[static_cast<size_t>(m[0])].share;
      f.weight = static_cast<double>(m.size());
      ffl_.push_back(f);
      close_flow(first);
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
      const int first = static_cast<int>(path_.size());
      std::vector<sg4::LinkInRoute> route;
      for (int l : *subs[i].links) {
        route.emplace_back(link_of(l));
        path_.emplace_back(lid[static_cast<size_t>(l)], 1.0);
      }
      f.src = zone->create_host("flow" + std::to_string(i), 1.0)->seal();
      zone->add_route(f.src->get_netpoint(), nullptr, nullptr, nullptr, route, false);
      f.dst = sink;
      f.share = subs[i].share;
      ffl_.push_back(f);
      close_flow(first);
    }
  }
  // Every flow from its own actor unless the flows are a handful of classes.
  fab_->actors = !rep || ffl_.size() > 16;
}

namespace {

FlowBackend::FabricState::ActorSet* make_set(FlowBackend* fb,
                                             std::vector<std::unique_ptr<FlowBackend::FabricState::ActorSet>>& sets,
                                             const std::vector<sg4::Host*>& src, const std::vector<sg4::Host*>& dst) {
  auto set = std::make_unique<FlowBackend::FabricState::ActorSet>();
  auto* st = set.get();
  st->done = sg4::Semaphore::create(0);
  st->sizes.assign(src.size(), 0);
  st->payloads.assign(src.size(), 0);
  const std::string tag = "fabric-flow-" + std::to_string(sets.size()) + "-";
  // Every flow goes to the sink (build_fabric) through a mailbox of its own whose permanent
  // receiver lives there: a send to it starts at once, as Comm::sendto would, but is not a detached
  // comm, which SimGrid 3.32 keeps in one list of the maestro and removes linearly when it ends
  // (CommImpl::finish: maestro->activities_.remove): O(flows^2) a round. One mailbox per flow
  // keeps each mailbox's queue at one comm (taking a comm out of a longer one moves the rest:
  // boost::circular_buffer::erase). The receiver takes the finished comms out after the round.
  static char payload = 0;
  st->drain = sg4::Semaphore::create(0);
  for (size_t i = 0; i < src.size(); ++i)
    st->mailboxes.push_back(sg4::Mailbox::by_name(tag + "mb" + std::to_string(i)));
  sg4::ActorPtr receiver = sg4::Actor::create(tag + "sink", dst.front(), [st] {
    while (true) {
      st->drain->acquire();
      std::vector<size_t> flows;
      flows.swap(st->to_drain);
      for (size_t i : flows) st->mailboxes[i]->get<char>();
    }
  });
  receiver->daemonize();
  for (auto* m : st->mailboxes) m->set_receiver(receiver);
  for (size_t i = 0; i < src.size(); ++i) {
    st->start.push_back(sg4::Semaphore::create(0));
    sg4::Host* s = src[i];
    sg4::Mailbox* mb = st->mailboxes[i];
    sg4::Actor::create(tag + std::to_string(i), s, [fb, st, i, mb] {
      while (true) {
        st->start[i]->acquire();
        const uint64_t size = st->sizes[i];
        const int flow = static_cast<int>(i);
        if (size > 0) {
          if (fb->timeline()) {
            FlowBackend::Live l;
            l.comm = mb->put_async(&payload, size);
            l.scale = st->payloads[i] / static_cast<double>(size);
            l.flow = flow;
            fb->live_begin(l);
            l.comm->wait();
            fb->flow_done(flow, &l, st->counted);
          } else {
            mb->put(&payload, size);
            fb->flow_done(flow, nullptr, st->counted);
          }
        }
        if (--st->remaining == 0) st->done->release();
      }
    })->daemonize();
  }
  sets.push_back(std::move(set));
  return st;
}

}  // namespace

void FlowBackend::round_fabric(double bytes, double payload, bool counted) {
  if (bytes <= 0) return;
  FabricState& st = *fab_;
  std::vector<uint64_t> sizes(ffl_.size());
  std::vector<double> payloads(ffl_.size());
  const double now = sg4::Engine::get_clock();
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < ffl_.size(); ++i) {
    sizes[i] = static_cast<uint64_t>(std::llround(bytes * ffl_[i].share * kByteScale));
    payloads[i] = payload * ffl_[i].share;
    smallest = std::min(smallest, sizes[i]);
  }
  // Every flow of the round moves bytes (a zero-share flow would change the problem).
  const bool whole_round = st.actors && reusable() && smallest > 0;
  if (whole_round && replay(bytes, payloads, counted)) return;
  for (size_t i = 0; i < ffl_.size(); ++i)
    if (counted && sizes[i] > 0) flow_started(static_cast<int>(i), payloads[i], now);
  flows_ += ffl_.size();
  if (st.actors) {
    if (whole_round) begin_recording();
    FabricState::ActorSet* set = nullptr;
    if (st.idle.empty()) {
      std::vector<sg4::Host*> src, dst;
      for (const auto& f : ffl_) {
        src.push_back(f.src);
        dst.push_back(f.dst);
      }
      set = make_set(this, st.sets, src, dst);
    } else {
      set = st.idle.back();
      st.idle.pop_back();
    }
    set->sizes = std::move(sizes);
    set->payloads = std::move(payloads);
    set->counted = counted;
    set->remaining = ffl_.size();
    for (auto& s : set->start) s->release();
    set->done->acquire();
    for (size_t i = 0; i < set->sizes.size(); ++i)
      if (set->sizes[i] > 0) set->to_drain.push_back(i);
    set->drain->release();
    st.idle.push_back(set);
    // 2^32 units of 2^-20 byte: the smallest flow's rounding is under 1.2e-10 of it.
    if (whole_round) end_recording(bytes, now, smallest >= (uint64_t{1} << 32));
  } else {
    // A handful of class flows from this actor; wait_any tells each one's end.
    std::vector<sg4::CommPtr> comms;
    std::vector<int> index;
    std::vector<Live> live(ffl_.size());
    for (size_t i = 0; i < ffl_.size(); ++i)
      if (sizes[i] > 0) {
        comms.push_back(sg4::Comm::sendto_async(ffl_[i].src, ffl_[i].dst, sizes[i]));
        index.push_back(static_cast<int>(i));
        if (timeline_) {
          Live& l = live[i];
          l.comm = comms.back();
          l.scale = payloads[i] / static_cast<double>(sizes[i]);
          l.flow = static_cast<int>(i);
          live_begin(l);
        }
      }
    wait_each(comms, index, live, counted);
  }
}

// ------------------------------------------------------------------ reused rounds

namespace {
constexpr double kMinReferenceSeconds = 1e-4;
}  // namespace

bool FlowBackend::replay(double bytes, const std::vector<double>& payloads, bool counted) {
  if (!ref_.valid) return false;
  const double c = bytes / ref_.bytes;
  const double now = sg4::Engine::get_clock();
  if (counted) {
    for (size_t i = 0; i < payloads.size(); ++i) flow_started(static_cast<int>(i), payloads[i], now);
    // By end time, as the flows would end (the ledger's busy time is the union of lifetimes).
    for (const auto& [dt, flow] : ref_.ends) flow_ended(flow, now + dt * c);
  }
  flows_reused_ += payloads.size();
  sg4::this_actor::sleep_for(ref_.duration * c);
  return true;
}

void FlowBackend::begin_recording() {
  ends_.assign(std::max(ffl_.size(), routes_.size()), 0.0);
  recording_ = true;
}

void FlowBackend::end_recording(double bytes, double start, bool keep) {
  recording_ = false;
  if (!keep || ref_.valid) return;
  ref_.ends.clear();
  const size_t n = fab_ ? ffl_.size() : routes_.size();
  for (size_t i = 0; i < n; ++i) ref_.ends.emplace_back(ends_[i] - start, static_cast<int>(i));
  std::stable_sort(ref_.ends.begin(), ref_.ends.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ref_.bytes = bytes;
  ref_.duration = ref_.ends.empty() ? 0.0 : ref_.ends.back().first;
  // SimGrid ends flows whose end dates are within surf/precision (1e-13 s, configure()) of each
  // other together: a kept round of >= 100 us carries that as <= 1e-9 of its time, and scaling
  // keeps relative errors as they are.
  ref_.valid = !ref_.ends.empty() && bytes > 0 && ref_.duration >= kMinReferenceSeconds;
}

FlowBackend::~FlowBackend() {
  if (advance_slot_) *advance_slot_ = nullptr;
}

void FlowBackend::round(double bytes, double payload, bool counted) {
  if (bytes <= 0) return;
  // Flows carry whole bytes; the fraction of a byte left over is added as its transfer time so
  // that the uncontended phase time is exact.
  const double whole = std::floor(bytes);
  const auto size = static_cast<uint64_t>(whole);
  // Every flow carries `whole` bytes: a kept round scales to any size.
  const bool replayed = size > 0 && every_hop_ && reusable() && ref_.valid &&
                        replay(whole, std::vector<double>(routes_.size(), payload), counted);
  if (size > 0 && !replayed) {
    flows_ += routes_.size();
    const double now = sg4::Engine::get_clock();
    if (counted)
      for (size_t i = 0; i < routes_.size(); ++i) flow_started(static_cast<int>(i), payload, now);
    if (every_hop_) {
      HopActors& a = free_hop_actors();
      a.busy = true;
      a.size = size;
      a.payload = payload;
      a.counted = counted;
      a.remaining = routes_.size();
      const bool record = reusable();
      if (record) begin_recording();
      for (auto& s : a.start) s->release();
      a.done->acquire();
      a.busy = false;
      if (record) end_recording(whole, now, true);
    } else {
      std::vector<sg4::CommPtr> comms;
      std::vector<Live> live(routes_.size());
      comms.reserve(routes_.size());
      for (size_t i = 0; i < routes_.size(); ++i) {
        comms.push_back(sg4::Comm::sendto_async(routes_[i].src, routes_[i].dst, size));
        if (timeline_) {
          live[i].comm = comms.back();
          live[i].scale = payload / whole;
          live[i].flow = static_cast<int>(i);
          live_begin(live[i]);
        }
      }
      std::vector<int> index(routes_.size());
      for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
      wait_each(comms, index, live, counted);
    }
  }
  if (bytes > whole) sg4::this_actor::sleep_for((bytes - whole) / ring_.bottleneck_bw);
}

void FlowBackend::run_phase(Clock& clock, const Phase& phase) {
  clock.sleep_for(phase.start_latency);
  const int n = ring_.nranks;
  if (n <= 1) return;
  const double volume = phase.timing.transfer * ring_.bottleneck_bw;
  const double payload = phase.hop_bytes > 0 ? phase.hop_bytes : volume;
  const int steps = n - 1;
  if (fidelity_ == config::Fidelity::FUSED) {
    clock.sleep_for(phase.timing.latency + extra_phase_latency_);
    fab_ ? round_fabric(volume, payload, phase.counted) : round(volume, payload, phase.counted);
  } else {
    for (int s = 0; s < steps; ++s) {
      clock.sleep_for((phase.timing.latency + extra_phase_latency_) / steps);
      fab_ ? round_fabric(volume / steps, payload / steps, phase.counted)
           : round(volume / steps, payload / steps, phase.counted);
    }
  }
}

}  // namespace ddpsim::network
