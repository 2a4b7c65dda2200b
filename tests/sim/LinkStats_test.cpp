// Link statistics of a whole step (report `links`, `busiest_link`) and the --trace utilisation
// counters, against hand computations: a ring all-reduce of S bytes over N ranks puts
// 2(N-1)/N x S on every ring hop's links (each direction once), so over a steady step every NIC
// link carries 2(N-1)/N x G for G bytes of gradients; on a fat-tree the leaf uplinks carry that
// payload once per hop that leaves its leaf. The counters must stay in [0, 1] and integrate to the
// reported bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/overrides.hpp"
#include "sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;

constexpr int kLayers = 4;
constexpr long long kNumel = 1 << 20;  // 4 MiB of float32 gradients per layer
constexpr double kGrad = kLayers * kNumel * 4.0;

// `nodes` x 8 GPUs (500 GB/s NVLink ports), 8 NICs of 50 GB/s a node; zero latencies and the ring model, so that a
// collective's time is its transfer alone; one bucket per layer.
config::Scenario make(int nodes, const std::vector<std::string>& fabric, const std::vector<std::string>& extra = {}) {
  Json cl = testing::cluster(nodes, 8, testing::link("nv", "nvlink", "4000Gbps", "0us"),
                             testing::link("ndr", "infiniband", "400Gbps", "0us"), 8);
  Json f = Json::object();
  for (const auto& kv : fabric) {
    const auto eq = kv.find('=');
    f[kv.substr(0, eq)] = config::parse_override_value(kv.substr(eq + 1));
  }
  if (!f.empty()) cl["fabric"] = f;
  Json sc{{"model", testing::synthetic_model(kLayers, kNumel, 2e-3, 4e-3)},
          {"cluster", cl},
          {"ddp", {{"bucket_cap_mb", 4}}},
          {"collective", {{"model", "ring"}, {"base_latency", "0us"}}},
          {"contention", {{"enabled", false}}}};
  for (const auto& kv : extra) {
    const auto eq = kv.find('=');
    const std::string path = kv.substr(0, eq);
    Json* at = &sc;
    size_t start = 0;
    while (true) {
      const auto dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (dot == std::string::npos) {
        (*at)[key] = config::parse_override_value(kv.substr(eq + 1));
        break;
      }
      at = &(*at)[key];
      start = dot + 1;
    }
  }
  return testing::scenario(sc);
}

struct Result {
  Json links, busiest, counters;
  double step = 0, start = 0, comm_alone = 0;
  int world = 0;
  std::string note;
};

// One simulation (with the trace recorded) in a child process.
Result run(const config::Scenario& sc) {
  std::function<Json()> work = [sc] {
    const auto r = engine::simulate(sc);
    Json counters = Json::array();
    for (const auto& t : r.link_counters)
      counters.push_back({{"class", t.cls}, {"capacity", t.capacity}, {"t", t.t}, {"value", t.value}});
    return Json{{"links", report::links_json(r)},
                {"busiest", report::busiest_link_json(r)},
                {"counters", counters},
                {"step", r.steady.step_time_s},
                {"start", r.steady.start_s},
                {"comm_alone", r.steady.comm_alone_s},
                {"world", r.world_size},
                {"note", r.links_note},
                {"chrome", report::to_chrome_trace(r)}};
  };
  auto out = app::run_in_children({work}, 1);
  EXPECT_TRUE(out[0].ok) << out[0].error;
  Result res;
  const Json& v = out[0].value;
  res.links = v["links"];
  res.busiest = v["busiest"];
  res.counters = v["counters"];
  res.step = v["step"].get<double>();
  res.start = v["start"].get<double>();
  res.comm_alone = v["comm_alone"].get<double>();
  res.world = v["world"].get<int>();
  res.note = v["note"].get<std::string>();
  // The Chrome trace carries one counter track per class.
  int c_events = 0;
  for (const auto& e : v["chrome"]["traceEvents"])
    if (e["ph"] == "C") ++c_events;
  int samples = 0;
  for (const auto& t : res.counters) samples += static_cast<int>(t["t"].size());
  EXPECT_EQ(c_events, samples);
  return res;
}

const Json& cls(const Result& r, const std::string& name) {
  for (const auto& c : r.links)
    if (c["class"] == name) return c;
  ADD_FAILURE() << "no link class " << name << " in " << r.links.dump();
  static const Json none;
  return none;
}

void expect_rel(double got, double want, double tol = 1e-9) {
  EXPECT_NEAR(got / want, 1.0, tol) << got << " vs " << want;
}

// The counters of every class: in [0, 1], and over the steady step they integrate to its bytes.
void check_counters(const Result& r) {
  ASSERT_FALSE(r.counters.empty());
  for (const auto& tr : r.counters) {
    const auto t = tr["t"].get<std::vector<double>>();
    const auto v = tr["value"].get<std::vector<double>>();
    ASSERT_EQ(t.size(), v.size());
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(v.back(), 0.0);
    double integral = 0;
    const double a = r.start, b = r.start + r.step;
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      EXPECT_GE(v[i], 0.0) << tr["class"];
      EXPECT_LE(v[i], 1.0 + 1e-9) << tr["class"] << " at " << t[i];
      EXPECT_LE(t[i], t[i + 1]);
      const double lo = std::max(a, t[i]), hi = std::min(b, t[i + 1]);
      if (hi > lo) integral += v[i] * (hi - lo);
    }
    const Json& c = cls(r, tr["class"].get<std::string>());
    expect_rel(tr["capacity"].get<double>(), c["capacity_bytes_per_s"].get<double>());
    expect_rel(integral * tr["capacity"].get<double>(), c["bytes"].get<double>(), 1e-6);
  }
}

TEST(LinkStats, SingleSwitchNicsCarryTheRingClosedForm) {
  for (const char* ranks : {"representative", "all"}) {
    const auto r = run(make(4, {}, {std::string("simulation.ranks=") + ranks}));
    const int n = r.world;
    ASSERT_EQ(n, 32);
    const double per_link = 2.0 * (n - 1) / n * kGrad;
    const Json& up = cls(r, "nic up");
    const Json& down = cls(r, "nic down");
    EXPECT_EQ(up["links"].get<int>(), 4);  // one aggregate NIC link a node on the single switch
    expect_rel(up["bytes_per_link"].get<double>(), per_link);
    expect_rel(down["bytes_per_link"].get<double>(), per_link);
    expect_rel(up["bytes"].get<double>(), 4 * per_link);
    const Json& out = cls(r, "nvlink port out");
    EXPECT_EQ(out["links"].get<int>(), n - 4);  // every intra-node hop: 7 a node
    expect_rel(out["bytes_per_link"].get<double>(), per_link);
    // Collectives run one after the other at their modelled rate: the NICs are busy exactly the
    // communication time (no latencies here) and at full rate while busy.
    expect_rel(up["busy_share"].get<double>() * r.step, r.comm_alone);
    expect_rel(up["mean_utilisation"].get<double>(), up["busy_share"].get<double>());
    // The phase's volume is set by its bottleneck, the node's 400 GB/s of NICs; each hop is its
    // own flow, so the NVLink ports (500 GB/s) carry it at full rate in 80 % of the time.
    EXPECT_EQ(r.busiest["class"], "nic up");
    expect_rel(out["busy_share"].get<double>(), 0.8 * up["busy_share"].get<double>());
    expect_rel(out["busiest_link"]["utilisation"].get<double>(), out["busy_share"].get<double>());
    check_counters(r);
  }
}

// Two servers per leaf (16 NIC ports of 8 NICs), four nodes packed: hops 1->2 and 3->0 leave their
// leaf, so the leaf uplinks together carry 2 x 2(N-1)/N x G, split over the NICs' rails.
TEST(LinkStats, FatTreeLeafUplinksCarryTheCrossLeafHops) {
  for (const char* ranks : {"representative", "all"}) {
    const auto r = run(make(4, {"topology=fat_tree", "nics_per_leaf=16", "switch_radix=64"},
                            {std::string("simulation.ranks=") + ranks}));
    const int n = r.world;
    const double hop = 2.0 * (n - 1) / n * kGrad;
    const Json& up = cls(r, "nic up");
    EXPECT_EQ(up["links"].get<int>(), 32);  // 4 servers x 8 NICs
    expect_rel(up["bytes"].get<double>(), 4 * hop);
    expect_rel(up["bytes_per_link"].get<double>(), hop / 8);
    expect_rel(cls(r, "leaf up")["bytes"].get<double>(), 2 * hop);
    expect_rel(cls(r, "spine down")["bytes"].get<double>(), 2 * hop);
    EXPECT_NE(r.note.find("flow backend"), std::string::npos);
    check_counters(r);
  }
}

// A 2:1 leaf with every NIC sending up (spread placement): the uplinks are the bottleneck, fully
// used while the collectives run, and the NICs at half their rate.
TEST(LinkStats, OversubscribedUplinksAreTheBusiestLinks) {
  const auto r = run(make(4, {"topology=fat_tree", "nics_per_leaf=16", "placement=spread", "routing=adaptive",
                              "oversubscription=\"2:1\""}));
  const Json& leaf = cls(r, "leaf up");
  const Json& nic = cls(r, "nic up");
  EXPECT_EQ(r.busiest["class"], "leaf up");
  expect_rel(leaf["busiest_link"]["utilisation"].get<double>(), leaf["busy_share"].get<double>());
  expect_rel(nic["busiest_link"]["utilisation"].get<double>(), 0.5 * leaf["busiest_link"]["utilisation"].get<double>());
  check_counters(r);
}

// ECMP: flows collide on uplinks and finish at different times; the counters follow every rate.
TEST(LinkStats, EcmpCountersIntegrateToTheBytes) {
  const auto r = run(
      make(8, {"topology=fat_tree", "nics_per_leaf=16", "placement=spread", "routing=ecmp"}, {"simulation.ranks=all"}));
  const int n = r.world;
  const double hop = 2.0 * (n - 1) / n * kGrad;
  expect_rel(cls(r, "leaf up")["bytes"].get<double>(), 8 * hop);  // spread: every hop leaves its leaf
  check_counters(r);
}

TEST(LinkStats, AnalyticGivesBytesOnly) {
  const auto r = run(make(4, {}, {"simulation.backend=analytic"}));
  const int n = r.world;
  const Json& up = cls(r, "nic up");
  expect_rel(up["bytes_per_link"].get<double>(), 2.0 * (n - 1) / n * kGrad);
  EXPECT_TRUE(up["busy_share"].is_null());
  EXPECT_TRUE(up["mean_utilisation"].is_null());
  EXPECT_TRUE(r.busiest.is_null());
  EXPECT_TRUE(r.counters.empty());
  EXPECT_NE(r.note.find("backend flow"), std::string::npos);
}

}  // namespace
}  // namespace ddpsim
