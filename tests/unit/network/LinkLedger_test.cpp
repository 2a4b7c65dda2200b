// Link statistics without SimGrid: the ledger's busy times (the union of overlapping flows'
// lifetimes), sums per class and busiest link; the utilisation track's merging and integral; the
// analytic backend's bytes per class against the ring closed form; the report's derived fields.
#include <gtest/gtest.h>

#include "network/analytic.hpp"
#include "network/link_ledger.hpp"
#include "report/report.hpp"
#include "report/tables.hpp"

namespace ddpsim::network {
namespace {

std::string name_of(long long key) { return "link" + std::to_string(key); }

TEST(LinkLedger, BusyTimeIsTheUnionOfOverlappingFlows) {
  LinkLedger l;
  const int up = l.add_class("nic up");
  const int a = l.add_link(up, 10.0, 1, 0);
  const int b = l.add_link(up, 10.0, 1, 1);
  // a: flows [0, 2] and [1, 3] overlap -> busy 3; then [5, 6] -> 4. b: [0, 1] -> 1.
  l.start(a, 0);
  l.start(b, 0);
  l.start(a, 1);
  l.end(b, 1);
  l.end(a, 2);
  l.end(a, 3);
  l.start(a, 5);
  l.end(a, 6);
  l.add_bytes(a, 30);
  l.add_bytes(b, 10);
  const auto t = l.totals(name_of, true);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].cls, "nic up");
  EXPECT_EQ(t[0].links, 2);
  EXPECT_DOUBLE_EQ(t[0].capacity, 20.0);
  EXPECT_DOUBLE_EQ(t[0].bytes, 40.0);
  EXPECT_DOUBLE_EQ(t[0].max_busy_s, 4.0);
  EXPECT_EQ(t[0].busiest, "link0");
  EXPECT_DOUBLE_EQ(t[0].busiest_busy_s, 4.0);
}

TEST(LinkLedger, CountsStandForIdenticalLinksAndEmptyClassesAreLeftOut) {
  LinkLedger l;
  const int out = l.add_class("nvlink port out");
  l.add_class("leaf up");  // no links
  const int down = l.add_class("nic down");
  const int x = l.add_link(out, 5.0, 7, 3);
  const int y = l.add_link(down, 2.0, 1, 4);
  const int z = l.add_link(down, 4.0, 1, 5);
  l.add_bytes(x, 1.0);
  l.add_bytes(y, 1.0);
  l.add_bytes(z, 2.0);  // same bytes / capacity as y: y, the first, stays the busiest
  const auto t = l.totals(name_of, false);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].links, 7);
  EXPECT_DOUBLE_EQ(t[0].capacity, 35.0);
  EXPECT_DOUBLE_EQ(t[0].bytes, 7.0);
  EXPECT_FALSE(t[0].timed);
  EXPECT_EQ(t[1].cls, "nic down");
  EXPECT_EQ(t[1].busiest, "link4");
  EXPECT_DOUBLE_EQ(l.class_capacity(out), 35.0);
}

TEST(UtilisationTrack, MergesEqualRatesAndIntegratesToTheBytes) {
  UtilisationTrack u(100.0);
  u.add(0.0, 1.0, 50.0);   // 0.5
  u.add(1.0, 3.0, 100.0);  // 0.5 again: merged
  u.add(3.0, 4.0, 100.0);  // 1.0
  u.add(6.0, 7.0, 20.0);   // a gap [4, 6): idle
  u.add_late(10.0);        // belongs to [6, 7): 0.3
  const auto t = u.track("leaf up");
  EXPECT_EQ(t.cls, "leaf up");
  EXPECT_DOUBLE_EQ(t.capacity, 100.0);
  const std::vector<double> want_t{0, 3, 4, 6, 7}, want_v{0.5, 1.0, 0.0, 0.3, 0.0};
  ASSERT_EQ(t.t.size(), want_t.size());
  for (size_t i = 0; i < want_t.size(); ++i) {
    EXPECT_DOUBLE_EQ(t.t[i], want_t[i]);
    EXPECT_NEAR(t.value[i], want_v[i], 1e-15);
  }
  double bytes = 0;
  for (size_t i = 0; i + 1 < t.t.size(); ++i) bytes += t.value[i] * (t.t[i + 1] - t.t[i]) * t.capacity;
  EXPECT_NEAR(bytes, 280.0, 1e-9);
}

class NullClock : public Clock {
 public:
  void sleep_for(double) override {}
};

// Ring of N = 16 ranks on 2 nodes x 8: an all-reduce of S bytes is two phases of (N-1)/N S on
// every hop: 14 NVLink hops and 2 NIC hops, each link 2(N-1)/N S.
TEST(AnalyticBackend, BytesPerClassFollowTheRing) {
  config::ClusterSpec c;
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.intra_link.kind = config::LinkKind::NVLINK;
  c.intra_link.bandwidth = 300e9;
  config::LinkSpec ib;
  ib.kind = config::LinkKind::INFINIBAND;
  ib.bandwidth = 50e9;
  c.inter_link = ib;
  c.nics_per_node = 8;
  const auto ring = collectives::build_ring(c);
  AnalyticBackend b(c, ring);
  NullClock clk;
  const double s = 1e9, n = 16;
  Phase p;
  p.timing.transfer = 1e-3;
  p.hop_bytes = (n - 1) / n * s;
  b.run_phase(clk, p);
  b.run_phase(clk, p);
  p.counted = false;  // iteration 1: not in the statistics
  b.run_phase(clk, p);
  const auto t = b.link_totals();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].cls, "nvlink port out");
  EXPECT_EQ(t[0].links, 14);
  EXPECT_DOUBLE_EQ(t[0].bytes / 14, 2 * (n - 1) / n * s);
  EXPECT_EQ(t[2].cls, "nic up");
  EXPECT_EQ(t[2].links, 2);
  EXPECT_DOUBLE_EQ(t[2].bytes / 2, 2 * (n - 1) / n * s);
  EXPECT_DOUBLE_EQ(t[2].capacity, 2 * 400e9);
  EXPECT_FALSE(t[2].timed);
  EXPECT_FALSE(b.links_note().empty());
  // Without a cluster: nothing.
  AnalyticBackend plain;
  plain.run_phase(clk, p);
  EXPECT_TRUE(plain.link_totals().empty());
}

TEST(LinkReport, PerStepFiguresAndTheBusiestLink) {
  report::StepReport r;
  r.steady.step_time_s = 2.0;
  r.link_steps = 2;  // totals over 4 s
  report::LinkClassTotals nic{"nic up", 4, 400.0, 800.0, true, 3.0, "node0", 200.0, 100.0, 3.0};
  report::LinkClassTotals leaf{"leaf up", 2, 100.0, 300.0, true, 4.0, "leaf0>spine0", 200.0, 50.0, 4.0};
  r.link_classes = {nic, leaf};
  const auto j = report::links_json(r);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_DOUBLE_EQ(j[0]["bytes"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(j[0]["bytes_per_link"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j[0]["busy_share"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j[0]["mean_utilisation"].get<double>(), 0.5);             // 800 / (400 x 4)
  EXPECT_DOUBLE_EQ(j[0]["busiest_link"]["utilisation"].get<double>(), 0.5);  // 200 / (100 x 4)
  EXPECT_DOUBLE_EQ(j[1]["busiest_link"]["utilisation"].get<double>(), 1.0);
  const auto best = report::busiest_link_json(r);
  EXPECT_EQ(best["name"], "leaf0>spine0");
  EXPECT_EQ(best["class"], "leaf up");
  EXPECT_DOUBLE_EQ(best["busy_share"].get<double>(), 1.0);
  const std::string table = report::link_table(r);
  EXPECT_NE(table.find("leaf0>spine0"), std::string::npos);
  EXPECT_NE(table.find("busiest link leaf0>spine0 (leaf up): 100.0% utilised"), std::string::npos);
  // Bytes only (analytic): no utilisation, no busiest link.
  r.link_classes[0].timed = r.link_classes[1].timed = false;
  EXPECT_TRUE(report::links_json(r)[0]["busy_share"].is_null());
  EXPECT_TRUE(report::busiest_link_json(r).is_null());
  r.link_steps = 0;
  EXPECT_TRUE(report::links_json(r).empty());
  EXPECT_EQ(report::link_table(r), "");
}

}  // namespace
}  // namespace ddpsim::network
