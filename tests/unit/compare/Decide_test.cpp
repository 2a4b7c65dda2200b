// compare/decide: metrics, groups, flat detection and the tolerance's source, on hand-made rows
// whose answer is known; and the cost of ownership (config/ownership.hpp) against a hand sum.
#include "compare/decide.hpp"

#include <gtest/gtest.h>

#include "compare/compare.hpp"
#include "config/ownership.hpp"
#include "core/error.hpp"

namespace ddpsim::compare {
namespace {

using core::Json;

Json row(int point, int nodes, double step, double samples_per_s, std::optional<double> cost = std::nullopt) {
  Json r{{"point", point}, {"params", {{"nodes", nodes}}}, {"step_time_s", step}, {"samples_per_s", samples_per_s}};
  if (cost) r["cost_per_million_samples"] = *cost;
  return r;
}

auto by_nodes = [](const Json& r) { return Json{{"nodes", r["params"]["nodes"]}}; };
auto one_group = [](const Json&) { return Json::object(); };
auto ran = [](const Json& r) { return !r.contains("error"); };

TEST(DecideMetric, ParsesTheThreeAndRefusesOthersNamingThem) {
  EXPECT_EQ(parse_metric("step_time"), Metric::STEP_TIME);
  EXPECT_EQ(parse_metric("samples_per_s"), Metric::SAMPLES_PER_S);
  EXPECT_EQ(parse_metric("cost"), Metric::COST);
  try {
    parse_metric("speed");
    FAIL() << "accepted";
  } catch (const core::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--metric speed"), std::string::npos) << m;
    EXPECT_NE(m.find("step_time"), std::string::npos) << m;
    EXPECT_NE(m.find("samples_per_s"), std::string::npos) << m;
    EXPECT_NE(m.find("cost"), std::string::npos) << m;
  }
  EXPECT_STREQ(metric_key(Metric::COST), "cost_per_million_samples");
  EXPECT_TRUE(larger_is_better(Metric::SAMPLES_PER_S));
  EXPECT_FALSE(larger_is_better(Metric::STEP_TIME));
}

TEST(Decide, BestPerGroupNotAcrossNodeCounts) {
  // 2 nodes step faster than 16 (less to synchronise) but 16 nodes do more work per second.
  Json rows =
      Json::array({row(0, 2, 0.100, 1000), row(1, 2, 0.120, 833), row(2, 16, 0.150, 5000), row(3, 16, 0.140, 5400)});
  DecideOptions o;
  auto ds = decide(rows, o, by_nodes, ran);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].key, (Json{{"nodes", 2}}));
  EXPECT_EQ(*ds[0].best, 0u);
  EXPECT_EQ(*ds[1].best, 3u);  // 16-node rows are ranked against each other only
  EXPECT_FALSE(ds[0].is_flat());
  EXPECT_FALSE(ds[1].is_flat());
  // One group: least step time names the 2-node row; most samples/s the 16-node one.
  EXPECT_EQ(*decide(rows, o, one_group, ran)[0].best, 0u);
  o.metric = Metric::SAMPLES_PER_S;
  EXPECT_EQ(*decide(rows, o, one_group, ran)[0].best, 3u);
}

TEST(Decide, DifferencesUnderOnePercentAreFlat) {
  // 6 us on 85.7 ms (0.007 %) and 0.6 %: flat with the best; 2 %: a real difference.
  Json rows = Json::array(
      {row(0, 1, 0.085700, 10), row(1, 1, 0.085706, 10), row(2, 1, 0.0862142, 10), row(3, 1, 0.087414, 10)});
  auto ds = decide(rows, {}, one_group, ran);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(*ds[0].best, 0u);
  EXPECT_TRUE(ds[0].is_flat());
  EXPECT_EQ(ds[0].flat, (std::vector<size_t>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(ds[0].tolerance, 0.01);
  EXPECT_EQ(ds[0].tolerance_source, "default");
  const std::string t = flat_text(rows, ds[0], Metric::STEP_TIME,
                                  [](const Json& r) { return "p" + std::to_string(r["point"].get<int>()); });
  EXPECT_EQ(t.rfind("flat: any of p0, p1, p2 within 1 %", 0), 0u) << t;
  // --tolerance 0.1 %: only the 6 us difference is flat.
  DecideOptions o;
  o.tolerance = 0.001;
  auto d2 = decide(rows, o, one_group, ran);
  EXPECT_EQ(d2[0].flat, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(d2[0].tolerance_source, "--tolerance");
  // 0: nothing is flat but exact equality (1e-9).
  o.tolerance = 0.0;
  EXPECT_FALSE(decide(rows, o, one_group, ran)[0].is_flat());
}

TEST(Decide, ThePredictionBandSetsTheToleranceWhenThereIsOne) {
  Json rows = Json::array({row(0, 1, 0.100, 10), row(1, 1, 0.103, 10)});
  // A run report's prediction: its band and the resolution its validation gives (5 %).
  rows[0]["prediction"] = {{"band_s", {0.095, 0.110}}, {"resolution", 0.05}};
  auto ds = decide(rows, {}, one_group, ran);
  EXPECT_DOUBLE_EQ(ds[0].tolerance, 0.05);
  EXPECT_EQ(ds[0].tolerance_source, "prediction band");
  EXPECT_TRUE(ds[0].is_flat());  // 3 % is inside the band
  DecideOptions o;
  o.tolerance = 0.01;  // an explicit tolerance wins over the band
  EXPECT_FALSE(decide(rows, o, one_group, ran)[0].is_flat());
  // A prediction without a resolution (or a non-positive one) leaves the 1 % default.
  rows[0]["prediction"] = {{"band_s", {0.095, 0.110}}};
  EXPECT_EQ(decide(rows, {}, one_group, ran)[0].tolerance_source, "default");
  rows[0]["prediction"]["resolution"] = 0.0;
  EXPECT_DOUBLE_EQ(decide(rows, {}, one_group, ran)[0].tolerance, 0.01);
}

TEST(Decide, AMissingFigureIsAnErrorNeverZero) {
  Json rows = Json::array({row(0, 1, 0.1, 10, 2.0), row(1, 1, 0.2, 5)});  // row 1 has no cost
  DecideOptions o;
  o.metric = Metric::COST;
  try {
    decide(rows, o, one_group, ran);
    FAIL() << "a row without cost_per_million_samples was ranked";
  } catch (const core::SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("cost_per_million_samples"), std::string::npos) << e.what();
  }
  Json bad = Json::array({row(0, 1, 0.1, 10)});
  bad[0]["step_time_s"] = nullptr;
  EXPECT_THROW(decide(bad, {}, one_group, ran), core::SimulationError);
  EXPECT_THROW(figure(Json::object(), "step_time_s", "x"), core::SimulationError);
  // Failed rows are not candidates and need no figures.
  Json failed = Json::array({row(0, 1, 0.1, 10), Json{{"point", 1}, {"params", {{"nodes", 1}}}, {"error", "boom"}}});
  EXPECT_EQ(decide(failed, {}, one_group, ran)[0].members, (std::vector<size_t>{0}));
}

TEST(Decide, CostPerMillionSamplesByHand) {
  // 2 USD per GPU-hour, 0.5 s per step, 32 samples per GPU per step: one GPU's step costs
  // 2 x 0.5 / 3600 = 1/3600 USD for 32 samples, so a million cost 1e6 / 32 / 3600 = 8.6805... USD.
  EXPECT_NEAR(cost_per_million(2.0, 0.5, 32), 1e6 / 32.0 / 3600.0, 1e-12);
}

TEST(Ownership, PricePerGpuHourByHand) {
  config::Ownership o;
  o.server_price = 100000;
  o.server_power_kw = 5;
  o.electricity_per_kwh = 0.10;
  o.pue = 1.2;
  o.years = 3;
  o.utilisation = 0.5;
  // 4 servers + a 50000 USD fabric over 3 x 8760 x 0.5 = 13140 hours in use: 450000 / 13140 USD
  // an hour; power 5 kW x 1.2 x 0.10 USD x 4 servers = 2.4 USD an hour; 32 GPUs.
  EXPECT_NEAR(config::ownership_price_per_gpu_hour(o, 4, 8, 50000), (450000.0 / 13140 + 2.4) / 32, 1e-12);
}

TEST(Ownership, AnOwnedClusterGetsAPriceFromItsOwnershipBlock) {
  config::ClusterSpec c;
  c.name = "owned";
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  config::LinkSpec l;
  l.bandwidth = 50e9;
  c.inter_link = l;
  config::Ownership o;
  o.server_price = 270000;
  o.server_power_kw = 10.2;
  o.electricity_per_kwh = 0.0806;
  o.pue = 1.58;
  o.years = 4;
  c.ownership = o;
  auto f = option_facts(c);
  EXPECT_EQ(f.price_source, "ownership");
  // Single ideal switch: no fabric capex; 2 servers over 4 x 8760 hours, 10.2 x 1.58 x 0.0806 USD
  // of power per server-hour, 16 GPUs.
  EXPECT_NEAR(f.price_per_gpu_hour, (2 * 270000.0 / 35040 + 2 * 10.2 * 1.58 * 0.0806) / 16, 1e-12);
  EXPECT_NEAR(f.ownership["power_per_hour"].get<double>(), 2 * 10.2 * 1.58 * 0.0806, 1e-12);
  EXPECT_TRUE(f.ownership["fabric_capex"].is_null());  // not priced, said so
  // A rent price wins: the cluster is rented.
  c.price_per_gpu_hour = 3;
  f = option_facts(c);
  EXPECT_EQ(f.price_source, "rent");
  EXPECT_DOUBLE_EQ(f.price_per_gpu_hour, 3);
}

}  // namespace
}  // namespace ddpsim::compare
