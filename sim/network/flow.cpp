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

// The pool (every flow simulated): senders, each sending a run of the round's flows when the
// phase's actor releases it (free_set), and one receiver on the sink. One set per round in
// flight, so that concurrent collectives (several NCCL streams) each get their own and run at the
// same time.
struct FlowBackend::ActorSet {
  std::vector<sg4::SemaphorePtr> start;  // per sender
  sg4::SemaphorePtr done;
  std::vector<uint64_t> sizes;
  std::vector<double> payloads;  // per flow, bytes of payload it stands for
  bool counted = false;
  size_t remaining = 0;
  // The sink's receiver takes the finished comms of the flows in `to_drain` out of their
  // mailboxes when released.
  std::vector<sg4::Mailbox*> mailboxes;
  sg4::SemaphorePtr drain;
  std::vector<size_t> to_drain;
};

// A fabric's graph, its links' capacities after background load and the job's flows on each.
struct FlowBackend::FabricState {
  std::unique_ptr<fabric::Fabric> fabric;
  std::vector<double> capacity;  // per fabric link, after background load
  std::vector<int> used;         // flows of the job on each fabric link
};

// Fabric flows carry bytes x kByteScale on links of capacity x kByteScale: the same times,
// with flow sizes rounded to 2^-20 byte instead of one byte (so the 1:1 fat-tree equals the
// single switch to rounding).
constexpr double kByteScale = 1048576.0;

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

// A peer-copy endpoint with its own transmit (up) and receive (down) link in the star zone.
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
                            bool counted, int first) {
  while (!comms.empty()) {
    const auto k = static_cast<size_t>(sg4::Comm::wait_any(comms));
    const int i = index[k];
    flow_done(i, timeline_ ? &live[static_cast<size_t>(i - first)] : nullptr, counted);
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
  if (ring_.nranks <= 1) return;
  const bool fabric = !c.inter_fabric.is_single_switch() && c.nodes > 1 && c.inter_link;
  add_classes(c, fabric);
  // The single switch is the degenerate fabric: a hop's path is its source port's transmit link
  // and its destination port's receive link, in whole bytes (the fraction of a byte left over is
  // slept at the ring's bottleneck bandwidth: round()).
  whole_bytes_ = !fabric;
  // Every flow, on either, leaves its own host through its path's links (the host's up list)
  // towards one sink with an empty down list: the pool's actors then all send to one receiver.
  sink_ = zone->create_host("flow-sink", 1.0)->seal();
  zone->add_route(nullptr, sink_->get_netpoint(), nullptr, nullptr, {}, false);
  if (fabric) {
    build_fabric(zone, c, ranks, cross_nic);
  } else {
    add_hop_flows(zone, c, ranks, false);
    representative_ = ranks == config::RankMode::REPRESENTATIVE;
  }
  // Every flow from its own actor of the pool unless the flows are a handful of classes.
  pooled_ = !representative_ || flows_.size() > 16;
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

sg4::Link* FlowBackend::link(sg4::NetZone* zone, const std::string& name, double bandwidth) const {
  return zone->create_link(name, bandwidth * (whole_bytes_ ? 1.0 : kByteScale))->set_latency(0)->seal();
}

void FlowBackend::add_flow(sg4::NetZone* zone, const std::string& name, const std::vector<sg4::Link*>& links,
                           double share, double weight) {
  sg4::Host* h = zone->create_host(name, 1.0)->seal();
  std::vector<sg4::LinkInRoute> route;
  for (sg4::Link* l : links) route.emplace_back(l);
  zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr, route, false);
  flows_.push_back({h, share, weight});
}

void FlowBackend::add_hop_flows(sg4::NetZone* zone, const config::ClusterSpec& c, config::RankMode ranks, bool fabric) {
  const std::string intra = config::to_string(c.fabric);
  auto out_name = [&](int g) { return "gpu" + std::to_string(g) + ">" + intra; };
  auto in_name = [&](int g) { return intra + ">gpu" + std::to_string(g); };
  auto nic_up = [&](int node) { return "node" + std::to_string(node) + ".nics>switch"; };
  auto nic_down = [&](int node) { return "switch>node" + std::to_string(node) + ".nics"; };
  if (ranks == config::RankMode::REPRESENTATIVE) {
    // One flow per hop class; its links take the class's hop bandwidth, and the class's first
    // hop names the links it stands for. On a fabric the inter-node class is the fabric's.
    const auto [intra_hop, inter_hop, n_intra, n_inter] = hop_classes(ring_);
    if (intra_hop) {
      const double bw = intra_hop->bandwidth;
      add_flow(zone, "intra-flow", {link(zone, "intra-tx", bw), link(zone, "intra-rx", bw)}, 1.0, 1.0);
      const int first = static_cast<int>(path_.size());
      path_.emplace_back(named_link(intra_out_, bw, n_intra, out_name(intra_hop->src)), 1.0);
      path_.emplace_back(named_link(intra_in_, bw, n_intra, in_name(intra_hop->dst)), 1.0);
      close_flow(first);
    }
    if (inter_hop && !fabric) {
      const double bw = inter_hop->bandwidth;
      add_flow(zone, "inter-flow", {link(zone, "inter-tx", bw), link(zone, "inter-rx", bw)}, 1.0, 1.0);
      const int first = static_cast<int>(path_.size());
      path_.emplace_back(named_link(nic_up_, bw, n_inter, nic_up(inter_hop->src / c.gpus_per_node)), 1.0);
      path_.emplace_back(named_link(nic_down_, bw, n_inter, nic_down(inter_hop->dst / c.gpus_per_node)), 1.0);
      close_flow(first);
    }
    return;
  }
  // Every hop: per-GPU ports for intra-node hops, per-node NIC ports between nodes (on a fabric
  // those are the fabric's flows), a port's transmit and receive link made (and named in the
  // ledger) as that direction is first used, at the bandwidth of the hop that uses it.
  struct Port {
    sg4::Link* tx = nullptr;
    sg4::Link* rx = nullptr;
    int tx_id = -1, rx_id = -1;  // ledger links
  };
  std::vector<Port> gpu(static_cast<size_t>(ring_.nranks)), nic(static_cast<size_t>(fabric ? 0 : c.nodes));
  int k = 0;
  for (const auto& h : ring_.hops) {
    if (h.inter_node && fabric) continue;
    const int sn = h.src / c.gpus_per_node, dn = h.dst / c.gpus_per_node;
    const std::string sname = h.inter_node ? "node" + std::to_string(sn) + "-nic" : "gpu" + std::to_string(h.src);
    const std::string dname = h.inter_node ? "node" + std::to_string(dn) + "-nic" : "gpu" + std::to_string(h.dst);
    Port& s = h.inter_node ? nic[static_cast<size_t>(sn)] : gpu[static_cast<size_t>(h.src)];
    if (!s.tx) {
      s.tx = link(zone, sname + "-tx", h.bandwidth);
      s.tx_id = h.inter_node ? named_link(nic_up_, h.bandwidth, 1, nic_up(sn))
                             : named_link(intra_out_, h.bandwidth, 1, out_name(h.src));
    }
    Port& d = h.inter_node ? nic[static_cast<size_t>(dn)] : gpu[static_cast<size_t>(h.dst)];
    if (!d.rx) {
      d.rx = link(zone, dname + "-rx", h.bandwidth);
      d.rx_id = h.inter_node ? named_link(nic_down_, h.bandwidth, 1, nic_down(dn))
                             : named_link(intra_in_, h.bandwidth, 1, in_name(h.dst));
    }
    add_flow(zone, "hop-flow" + std::to_string(k++), {s.tx, d.rx}, 1.0, 1.0);
    const int first = static_cast<int>(path_.size());
    path_.emplace_back(s.tx_id, 1.0);
    path_.emplace_back(d.rx_id, 1.0);
    close_flow(first);
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
  ++n_flows_;
}

size_t FlowBackend::flows_per_sender() const {
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(flows_.size())) / 8)));
}

size_t FlowBackend::actors_per_round() const {
  // A set of the pool per round in flight: its senders and the sink's receiver.
  if (!pooled_) return 0;
  const size_t per = flows_per_sender();
  return (flows_.size() + per - 1) / per + 1;
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

  // Intra-node hops as on the single switch (one representative class, or every hop).
  add_hop_flows(zone, c, ranks, true);

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
  representative_ = rep;
  if (rep) {
    // One flow per class on one link of the class's smallest per-flow share; statistics count
    // each fabric link once with its flow count.
    std::vector<std::vector<int>> members(classes.size());
    for (size_t i = 0; i < subs.size(); ++i) members[static_cast<size_t>(cls_of[i])].push_back(static_cast<int>(i));
    std::vector<char> seen(nl, 0);
    for (size_t k2 = 0; k2 < members.size(); ++k2) {
      const auto& m = members[k2];
      double rate = std::numeric_limits<double>::infinity();
      Flow f;
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
      f.share = subs[static_cast<size_t>(m[0])].share;
      f.weight = static_cast<double>(m.size());
      flows_.push_back(f);
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
      Flow f;
      const int first = static_cast<int>(path_.size());
      std::vector<sg4::LinkInRoute> route;
      for (int l : *subs[i].links) {
        route.emplace_back(link_of(l));
        path_.emplace_back(lid[static_cast<size_t>(l)], 1.0);
      }
      f.src = zone->create_host("flow" + std::to_string(i), 1.0)->seal();
      zone->add_route(f.src->get_netpoint(), nullptr, nullptr, nullptr, route, false);
      f.share = subs[i].share;
      flows_.push_back(f);
      close_flow(first);
    }
  }
}

// ------------------------------------------------------------------ the pool

FlowBackend::ActorSet& FlowBackend::free_set() {
  if (!idle_.empty()) {
    ActorSet* set = idle_.back();
    idle_.pop_back();
    return *set;
  }
  auto owned = std::make_unique<ActorSet>();
  ActorSet* st = owned.get();
  st->done = sg4::Semaphore::create(0);
  st->sizes.assign(flows_.size(), 0);
  st->payloads.assign(flows_.size(), 0);
  const std::string tag = "flow-" + std::to_string(sets_.size()) + "-";
  // Every flow goes to the sink through a mailbox of its own whose permanent receiver lives
  // there: a send to it starts at once (CommImpl::isend), as Comm::sendto would, but is not a
  // detached comm, which SimGrid 3.32 keeps in one list of the maestro and removes linearly when
  // it ends (CommImpl::finish: maestro->activities_.remove): O(flows^2) a round. One mailbox per
  // flow keeps each mailbox's queue at one comm (taking a comm out of a longer one moves the
  // rest: boost::circular_buffer::erase). The receiver takes the finished comms out after the
  // round.
  st->drain = sg4::Semaphore::create(0);
  const size_t n = flows_.size();
  for (size_t i = 0; i < n; ++i) st->mailboxes.push_back(sg4::Mailbox::by_name(tag + "mb" + std::to_string(i)));
  sg4::ActorPtr receiver = sg4::Actor::create(tag + "sink", sink_, [st] {
    while (true) {
      st->drain->acquire();
      std::vector<size_t> flows;
      flows.swap(st->to_drain);
      for (size_t i : flows) st->mailboxes[i]->get<char>();
    }
  });
  receiver->daemonize();
  for (auto* m : st->mailboxes) m->set_receiver(receiver);
  // Senders: each sends a run of flows_per_sender() flows, moving to each flow's host before its
  // send (a comm leaves the host its sender is on when it starts: CommImpl::start), and waits for
  // them. A sender's finished comms leave its activity list linearly (CommImpl::finish), each
  // move casts every activity it holds (Actor::set_host) and wait_any registers on each pending
  // comm, so a sender of m flows pays O(m^2) a round (measured: __dynamic_cast and the wait_any
  // simcall were 28 % of a 32,768-GPU run's CPU with m = sqrt(flows)). m = sqrt(flows) / 8 keeps
  // that O(flows^1.5 / 8) and the actors (two memory mappings each: engine/simulation.cpp) at
  // 8 sqrt(flows) + 1 per round in flight (2,794 for 122,880 flows at 131,072 GPUs).
  const size_t per = flows_per_sender();
  for (size_t first = 0; first < n; first += per) {
    const size_t last = std::min(n, first + per);
    st->start.push_back(sg4::Semaphore::create(0));
    sg4::SemaphorePtr start = st->start.back();
    sg4::Actor::create(tag + std::to_string(first / per), flows_[first].src, [this, st, start, first, last] {
      std::vector<sg4::CommPtr> comms;
      std::vector<int> index;
      std::vector<Live> live(timeline_ ? last - first : 0);
      while (true) {
        start->acquire();
        for (size_t i = first; i < last; ++i) {
          const uint64_t size = st->sizes[i];
          if (size == 0) continue;
          if (sg4::this_actor::get_host() != flows_[i].src) sg4::this_actor::set_host(flows_[i].src);
          comms.push_back(st->mailboxes[i]->put_async(&token_, size));
          index.push_back(static_cast<int>(i));
          if (timeline_) {
            Live& l = live[i - first];
            l.comm = comms.back();
            l.scale = st->payloads[i] / static_cast<double>(size);
            l.flow = static_cast<int>(i);
            live_begin(l);
          }
        }
        wait_each(comms, index, live, st->counted, static_cast<int>(first));
        st->remaining -= last - first;
        if (st->remaining == 0) st->done->release();
      }
    })->daemonize();
  }
  sets_.push_back(std::move(owned));
  return *st;
}

// ------------------------------------------------------------------ rounds

void FlowBackend::round(double bytes, double payload, bool counted) {
  if (bytes <= 0) return;
  // What the flows carry: whole bytes on the single switch (the rest is slept below, so that the
  // uncontended phase time is exact), 2^-20 byte units on a fabric.
  const double volume = whole_bytes_ ? std::floor(bytes) : bytes;
  std::vector<uint64_t> sizes(flows_.size());
  std::vector<double> payloads(flows_.size());
  uint64_t smallest = std::numeric_limits<uint64_t>::max(), largest = 0;
  for (size_t i = 0; i < flows_.size(); ++i) {
    const double b = bytes * flows_[i].share;
    sizes[i] =
        whole_bytes_ ? static_cast<uint64_t>(std::floor(b)) : static_cast<uint64_t>(std::llround(b * kByteScale));
    payloads[i] = payload * flows_[i].share;
    smallest = std::min(smallest, sizes[i]);
    largest = std::max(largest, sizes[i]);
  }
  // A round whose every flow moves bytes (a zero-share flow would change the problem) may reuse
  // the kept one, or become it.
  const bool whole_round = pooled_ && reusable() && smallest > 0;
  if (largest > 0 && !(whole_round && replay(volume, payloads, counted))) {
    const double now = sg4::Engine::get_clock();
    for (size_t i = 0; i < flows_.size(); ++i)
      if (counted && sizes[i] > 0) flow_started(static_cast<int>(i), payloads[i], now);
    n_flows_ += flows_.size();
    if (pooled_) {
      if (whole_round) begin_recording();
      ActorSet& set = free_set();
      set.sizes = std::move(sizes);
      set.payloads = std::move(payloads);
      set.counted = counted;
      set.remaining = flows_.size();
      for (auto& s : set.start) s->release();
      set.done->acquire();
      for (size_t i = 0; i < set.sizes.size(); ++i)
        if (set.sizes[i] > 0) set.to_drain.push_back(i);
      set.drain->release();
      idle_.push_back(&set);
      // Whole bytes scale exactly; 2^32 units of 2^-20 byte: the smallest flow's rounding is
      // under 1.2e-10 of it.
      if (whole_round) end_recording(volume, now, whole_bytes_ || smallest >= (uint64_t{1} << 32));
    } else {
      // A handful of class flows from this actor; wait_any tells each one's end.
      std::vector<sg4::CommPtr> comms;
      std::vector<int> index;
      std::vector<Live> live(flows_.size());
      for (size_t i = 0; i < flows_.size(); ++i)
        if (sizes[i] > 0) {
          comms.push_back(sg4::Comm::sendto_async(flows_[i].src, sink_, sizes[i]));
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
  if (bytes > volume) sg4::this_actor::sleep_for((bytes - volume) / ring_.bottleneck_bw);
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
  ends_.assign(flows_.size(), 0.0);
  recording_ = true;
}

void FlowBackend::end_recording(double bytes, double start, bool keep) {
  recording_ = false;
  if (!keep || ref_.valid) return;
  ref_.ends.clear();
  for (size_t i = 0; i < flows_.size(); ++i) ref_.ends.emplace_back(ends_[i] - start, static_cast<int>(i));
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

void FlowBackend::run_phase(Clock& clock, const Phase& phase) {
  clock.sleep_for(phase.start_latency);
  const int n = ring_.nranks;
  if (n <= 1) return;
  const double volume = phase.timing.transfer * ring_.bottleneck_bw;
  const double payload = phase.hop_bytes > 0 ? phase.hop_bytes : volume;
  const int steps = n - 1;
  if (fidelity_ == config::Fidelity::FUSED) {
    clock.sleep_for(phase.timing.latency + extra_phase_latency_);
    round(volume, payload, phase.counted);
  } else {
    for (int s = 0; s < steps; ++s) {
      clock.sleep_for((phase.timing.latency + extra_phase_latency_) / steps);
      round(volume / steps, payload / steps, phase.counted);
    }
  }
}

}  // namespace ddpsim::network
