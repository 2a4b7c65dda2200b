#pragma once
// The flow backend: a ring phase realised as SimGrid communications on the cluster's links, so
// that collectives sharing links slow each other down. Links have zero latency and SimGrid runs
// pure max-min sharing (docs/facts.md §5); a phase's latency is added here with sleeps, which keeps
// the uncontended result equal to the closed form.
//
// Platform (linear in GPUs, docs/facts.md §6): one star zone. Every flow leaves a host of its own
// whose up list is the flow's path, towards one sink with an empty down list, so no N x N table
// exists; the single switch is the degenerate fabric whose paths are two links: the source port's
// transmit link and the destination port's receive link (per-GPU ports, the GPU's NVLink/PCIe,
// for intra-node hops; per-node NIC ports between nodes). One code path runs both.
//
// Ranks: `representative` puts one flow per hop class (intra-node, inter-node) on one endpoint
// pair per class. On this fabric each link carries exactly one hop of a collective, so every hop
// of a class moves at the same rate as its representative, and concurrent collectives share the
// representative links as they share every real one: the result equals the every-flow simulation
// (tested to 1e-9). `all` simulates every hop; the flows are sent by one pool (a set per round in
// flight) of about 8 sqrt(N) senders of sqrt(N) / 8 flows each, since SimGrid removes a finished
// activity from its issuer's list linearly (CommImpl::finish), so one actor holding N flows would
// pay O(N^2) per phase, and an actor per flow would need two memory mappings per flow (its stack
// and guard page; vm.max_map_count); a handful of class flows are sent by the phase's own actor.
//
// Fabric (cluster `fabric` other than single_switch, network/fabric_flows below): the inter-node
// hops become one flow per NIC (and connection) routed through the fabric graph (sim/fabric), so
// oversubscribed uplinks, routing collisions and background load slow exactly the hops that cross
// them. A flow's path is its source endpoint's up list (NIC tx, leaf up, spine down, ..., NIC
// rx) towards one shared sink with an empty down list; memory is O(flows x path length).
// Representative classes: flows whose paths have the same per-link shares (capacity / flows on
// the link) form a class when no link carries flows of two classes; a class is then simulated as
// one flow on one link of that share, which is exact under max-min (every flow of a class runs at
// the class's rate, and concurrent collectives scale every link's flow count alike). Otherwise
// (ECMP collisions, placement, NCCL_CROSS_NIC=1 mixing classes) every flow is simulated.
//
// Reused rounds (`serial`: the engine runs one phase at a time and nothing else on the network):
// in the every-flow modes (`all` on the single switch, every fabric flow) a round's flows all start
// together on an otherwise idle network, so its max-min rates do not depend on the bytes, and a
// round of c times the bytes is the same problem with every event c times later (progressive
// filling: the rates are fixed by the links alone; each flow's remainder, hence each completion
// time, scales by c). The first such round precise enough to be scaled -- its smallest flow >=
// 2^32 units of a 2^-20 byte on a fabric (rounding < 1.2e-10 of it), and >= 100 us long, since
// SimGrid ends flows whose end dates are within 1e-13 s together (< 1e-9 of it) -- is simulated
// flow by flow and kept: its duration and each flow's end. Later rounds are that solution scaled
// (relative errors stay as they are), with the same link statistics, and count as `flows_reused`.
// Not with --trace (its counters need SimGrid's time steps) nor when several NCCL streams or peer
// copies may overlap; `simulation.reuse_rounds` false simulates every round
// (tests/sim/ReuseRounds_test.cpp: equal to 1e-9).
//
// Link statistics (network/link_ledger): every flow carries a list of the links it stands for
// (GPU ports and node NICs on the single switch; NIC, leaf, spine and core links on a fabric) with
// how many flows of the job each entry is; a counted round adds its payload to them and marks them
// busy from the round's start to the flow's end. With `link_timeline` (--trace) the bytes every
// active flow moved between two SimGrid time steps (Activity::get_remaining) are added to its link
// classes' utilisation tracks: rates are constant between steps under max-min, so the tracks are
// exact and integrate to the bytes.
#include <simgrid/forward.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "config/specs.hpp"
#include "network/backend.hpp"
#include "network/link_ledger.hpp"

namespace simgrid::s4u {
class Host;
class NetZone;
class Engine;
}  // namespace simgrid::s4u

namespace ddpsim::network {

class FlowBackend final : public Backend {
 public:
  // Builds its endpoints and links in `zone` (a star zone, not yet sealed).
  FlowBackend(simgrid::s4u::NetZone* zone, const config::ClusterSpec& cluster, const collectives::RingPlan& ring,
              config::Fidelity fidelity, config::RankMode ranks, int cross_nic = 2, bool link_timeline = false,
              int p2p_gpus = 0, double p2p_bandwidth = 0, bool serial = false);
  ~FlowBackend() override;
  std::string name() const override { return "flow"; }
  // Each hop carries transfer x bottleneck bandwidth bytes, so that uncontended the phase takes
  // exactly its modelled time (for the ring model that volume is (N-1)/N of the bytes; other
  // algorithms and protocols are carried as the wire volume that gives their bandwidth). Fused:
  // one flow per hop for the whole phase; stepwise: N-1 rounds of one flow per hop, each after
  // 1/(N-1) of the latency.
  void run_phase(Clock& clock, const Phase& phase) override;
  uint64_t flows() const override { return n_flows_; }
  uint64_t flows_reused() const override { return flows_reused_; }
  std::vector<LinkClassTotals> link_totals() const override;
  std::string links_note() const override;
  std::vector<LinkCounterTrack> link_counters() const override;
  // One flow from GPU src's port to GPU dst's, each port a transmit and a receive link of
  // p2p_bandwidth (the engine passes the GPU pair's bandwidth; `rate` is not applied: SimGrid
  // 3.32 has no rate cap for host-to-host flows); needs p2p_gpus > src, dst at construction.
  void transfer(Clock& clock, int src, int dst, double bytes, double rate) override;
  struct FabricState;
  struct Live;
  struct ActorSet;

  // A fabric whose flows are simulated as representative classes.
  bool representative_fabric() const { return fab_ && representative_; }
  size_t fabric_flows() const { return fab_ ? flows_.size() : 0; }
  size_t actors_per_round() const override;

  // Applies the pure max-min settings; call on a fresh engine before building anything.
  static void configure(simgrid::s4u::Engine& engine);

 private:
  // A flow: its own host, whose up list is the flow's path (towards sink_), its share of the hop
  // volume, and the flows of the job it stands for (a representative class).
  struct Flow {
    simgrid::s4u::Host* src = nullptr;
    double share = 1.0;
    double weight = 1.0;
  };
  // Every round: one flow per entry of flows_ (single switch: one per hop or hop class; fabric:
  // intra-node hops, then one per NIC flow or class), each `share` of the round's volume.
  void round(double bytes, double payload, bool counted);
  void build_fabric(simgrid::s4u::NetZone* zone, const config::ClusterSpec& cluster, config::RankMode ranks,
                    int cross_nic);
  // The ring's hops as flows (one per hop class for `representative`), the inter-node ones only
  // on the single switch (`fabric` false): a hop is its source port's transmit link and its
  // destination port's receive link.
  void add_hop_flows(simgrid::s4u::NetZone* zone, const config::ClusterSpec& cluster, config::RankMode ranks,
                     bool fabric);
  void add_flow(simgrid::s4u::NetZone* zone, const std::string& name, const std::vector<simgrid::s4u::Link*>& links,
                double share, double weight);
  simgrid::s4u::Link* link(simgrid::s4u::NetZone* zone, const std::string& name, double bandwidth) const;
  ActorSet& free_set();  // a set of the pool not running a round (created on first need)
  size_t flows_per_sender() const;

  std::vector<Flow> flows_;
  simgrid::s4u::Host* sink_ = nullptr;
  std::unique_ptr<FabricState> fab_;
  bool whole_bytes_ = true;      // single switch: flows carry whole bytes (fabric: 2^-20 byte units)
  bool representative_ = false;  // flows stand for classes of hops
  bool pooled_ = false;          // flows are sent by the pool's actors (else by the phase's actor)
  double extra_phase_latency_ = 0;
  std::vector<std::unique_ptr<ActorSet>> sets_;
  std::vector<ActorSet*> idle_;
  char token_ = 0;  // what the pool's flows carry (SimGrid's payload pointer)

  // Link statistics: per flow of a round its slice of path_ (ledger link, flows of the job the
  // entry stands for) and of flow_classes_ (link class, links x flows: its weight in the class's
  // bytes).
  struct FlowLinks {
    int first = 0, n = 0;
    int cls_first = 0, cls_n = 0;
  };
  LinkLedger ledger_;
  std::vector<std::pair<int, double>> path_;
  std::vector<std::pair<int, double>> flow_classes_;
  std::vector<FlowLinks> flow_links_;
  std::vector<std::string> names_;  // ledger keys < 0: names_[-key - 1]; keys >= 0: fabric link ids
  int class_of_[16] = {};           // fabric::LinkClass -> ledger class (fabric mode)
  int intra_out_ = -1, intra_in_ = -1, nic_up_ = -1, nic_down_ = -1;
  void add_classes(const config::ClusterSpec& cluster, bool fabric);
  int named_link(int cls, double capacity, long long count, std::string name);
  // Closes the path_ entries added since `first` into the next flow's FlowLinks.
  void close_flow(int first);
  // A counted flow starts at t: its payload onto its links, which are busy from t.
  void flow_started(int flow, double payload, double t);
  void flow_ended(int flow, double t);
  // Waits for the comms of a handful of flows (index: their flows) and ends each as it finishes.
  // `live` holds the flows from `first` on.
  void wait_each(std::vector<simgrid::s4u::CommPtr>& comms, std::vector<int>& index, std::vector<Live>& live,
                 bool counted, int first = 0);
  // --trace: utilisation tracks per class, fed by the flows in flight (Live) at every time step.
  bool timeline_ = false;
  std::shared_ptr<FlowBackend*> advance_slot_;  // the time-step callback's way to this backend
  std::vector<UtilisationTrack> tracks_;
  std::vector<Live*> live_;
  std::vector<double> acc_;

 public:
  // Called by SimGrid at every time step while the timeline is recorded (public for the hook).
  void on_advance(double delta);
  void live_begin(Live& l);
  void live_end(Live& l);
  void flow_done(int flow, Live* l, bool counted);
  bool timeline() const { return timeline_; }

 private:
  collectives::RingPlan ring_;
  config::Fidelity fidelity_;
  std::vector<simgrid::s4u::Host*> p2p_;  // per-GPU port endpoints for transfer()
  uint64_t n_flows_ = 0;
  // Reused rounds (see above): the kept round's volume (fabric: before the shares; single
  // switch: whole bytes per flow), duration and (end - start, flow) by end.
  struct Reference {
    bool valid = false;
    double bytes = 0, duration = 0;
    std::vector<std::pair<double, int>> ends;
  };
  bool serial_ = false;
  Reference ref_;
  std::vector<double> ends_;  // per flow, its end time while a round is recorded
  bool recording_ = false;
  uint64_t flows_reused_ = 0;
  // A round that may reuse (or become) the reference: every-flow, serial, no timeline.
  bool reusable() const { return serial_ && !timeline_; }
  // Replays the reference scaled to `bytes` with `payloads` per flow; false when there is none.
  bool replay(double bytes, const std::vector<double>& payloads, bool counted);
  void begin_recording();
  void end_recording(double bytes, double start, bool keep);
};

}  // namespace ddpsim::network
