// `ddpsim compare`'s domain half without SimGrid: option parsing, the grid, the arithmetic of
// cost, scaling and time to train (against hand computations), best-per-criterion with fit
// exclusion, and the rendered outputs.
#include "compare/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace ddpsim::compare {
namespace {

using core::Json;

TEST(CompareOption, PlainNameIsItsOwnLabel) {
  auto o = parse_cluster_option("dgx-h100");
  EXPECT_EQ(o.cluster, "dgx-h100");
  EXPECT_EQ(o.label, "dgx-h100");
  EXPECT_TRUE(o.overrides.empty());
}

TEST(CompareOption, LabelAndOverridesWithColonsAndCommasInValues) {
  auto o = parse_cluster_option("ndr-2:1=dgx-h100:fabric.topology=fat_tree,fabric.oversubscription=2:1");
  EXPECT_EQ(o.label, "ndr-2:1");
  EXPECT_EQ(o.cluster, "dgx-h100");
  ASSERT_EQ(o.overrides.size(), 2u);
  EXPECT_EQ(o.overrides[0], "fabric.topology=fat_tree");
  EXPECT_EQ(o.overrides[1], "fabric.oversubscription=2:1");
  // A comma not followed by PATH= stays inside the value (JSON lists).
  auto j = parse_cluster_option("dgx-h100:collective.NCCL_ALGO=[\"Ring\",\"Tree\"],nodes=4");
  ASSERT_EQ(j.overrides.size(), 2u);
  EXPECT_EQ(j.overrides[0], "collective.NCCL_ALGO=[\"Ring\",\"Tree\"]");
  EXPECT_EQ(j.overrides[1], "nodes=4");
  EXPECT_EQ(j.label, j.text);
}

TEST(CompareOption, BadTextsAreRefusedWithTheForm) {
  for (const char* bad :
       {"", "=dgx-h100", "x=", "dgx-h100:", "dgx-h100:fabric.topology", "dgx-h100:=3", "dgx-h100:cluster=dgx-a100"}) {
    try {
      parse_cluster_option(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--cluster"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected [LABEL=]CLUSTER"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_distinct_labels({parse_cluster_option("a=dgx-h100"), parse_cluster_option("a=dgx-a100")}),
               core::ConfigError);
  EXPECT_NO_THROW(check_distinct_labels({parse_cluster_option("dgx-h100"), parse_cluster_option("dgx-a100")}));
}

TEST(CompareNodes, ListsAndErrors) {
  EXPECT_EQ(parse_nodes("16,1,64"), (std::vector<int>{16, 1, 64}));
  for (const char* bad : {"", "0", "1,,2", "1,x", "-4", "1,1", "2.5", "99999999"}) {
    try {
      parse_nodes(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--nodes"), std::string::npos) << e.what();
    }
  }
}

TEST(CompareGrid, OptionMajorAndOverridesInOrder) {
  auto g = option_grid(2, {1, 16});
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[1].option, 0u);
  EXPECT_EQ(g[1].nodes, 16);
  EXPECT_EQ(g[2].option, 1u);
  EXPECT_EQ(g[2].nodes, 1);
  EXPECT_EQ(option_grid(3, {}).size(), 3u);
  auto o = parse_cluster_option("dgx-h100:fabric.topology=fat_tree");
  EXPECT_EQ(
      point_overrides({"training.batch_size=8"}, o, 16),
      (std::vector<std::string>{"training.batch_size=8", "cluster=dgx-h100", "fabric.topology=fat_tree", "nodes=16"}));
  EXPECT_EQ(baseline_overrides({}, o),
            (std::vector<std::string>{"cluster=dgx-h100", "fabric.topology=fat_tree", "nodes=1", "gpus_per_node=1"}));
}

TEST(CompareArithmetic, CostPerMillionSamplesByHand) {
  // 128 GPUs at 6.88 USD per GPU-hour = 880.64 USD/h. Steps of 0.5 s of 4096 samples: a million
  // samples take 1e6 / 4096 steps = 244.140625 steps = 122.0703125 s = 0.0339084201... h, so
  // they cost 880.64 x 122.0703125 / 3600 = 29.861111... USD.
  const double expected = 880.64 * 122.0703125 / 3600.0;
  EXPECT_NEAR(cost_per_million_samples(880.64, 0.5, 4096), expected, 1e-12 * expected);
  EXPECT_NEAR(expected, 29.8611111111, 1e-9);
  // Twice the price or twice the step time doubles it; twice the samples per step halves it.
  EXPECT_DOUBLE_EQ(cost_per_million_samples(2 * 880.64, 0.5, 4096), 2 * expected);
  EXPECT_DOUBLE_EQ(cost_per_million_samples(880.64, 1.0, 4096), 2 * expected);
  EXPECT_DOUBLE_EQ(cost_per_million_samples(880.64, 0.5, 8192), expected / 2);
}

TEST(CompareArithmetic, ScalingEfficiencyIsThroughputPerGpuOverOneGpu) {
  // 3000 samples/s on 128 GPUs = 23.4375 per GPU; one GPU alone does 30: 78.125 %.
  EXPECT_DOUBLE_EQ(scaling_efficiency(3000, 128, 30), 0.78125);
  EXPECT_DOUBLE_EQ(scaling_efficiency(3840, 128, 30), 1.0);
}

Json fake_report(int nodes, int gpn, double step, int per_rank, std::optional<int> seq = std::nullopt) {
  const int world = nodes * gpn;
  Json r{{"nodes", nodes},
         {"gpus_per_node", gpn},
         {"world_size", world},
         {"step_time_s", step},
         {"samples_per_rank", per_rank},
         {"samples_per_s", per_rank * world / step},
         {"overlap_ratio", 0.5},
         {"exposed_comm_s", 0.01},
         {"compute_only_s", step * 0.9},
         {"num_buckets", 10},
         {"seq_len", seq ? Json(*seq) : Json(nullptr)}};
  return r;
}

TEST(CompareRow, DerivedFiguresFromTheReport) {
  auto opt = parse_cluster_option("h100=dgx-h100");
  OptionFacts f;
  f.price_per_gpu_hour = 6.88;
  f.has_fabric = true;
  f.topology = "fat_tree";
  const Json rep = fake_report(16, 8, 0.5, 32, 512);  // 4096 samples per step, 8192 samples/s
  const Json base = fake_report(1, 1, 0.4, 32, 512);  // 80 samples/s on one GPU
  Target t{Target::TOKENS, 1e9};
  Json row = compare_row({0, 16}, opt, rep, &base, f, t);
  EXPECT_EQ(row["label"], "h100 x16");
  EXPECT_DOUBLE_EQ(row["samples_per_step"].get<double>(), 4096);
  EXPECT_DOUBLE_EQ(row["tokens_per_s"].get<double>(), 8192.0 * 512);
  EXPECT_DOUBLE_EQ(row["scaling_efficiency"].get<double>(), (8192.0 / 128) / 80);  // 0.8
  EXPECT_DOUBLE_EQ(row["price_per_hour"].get<double>(), 6.88 * 128);
  // cost per million samples = price x time / samples, the definition itself.
  EXPECT_NEAR(row["cost_per_million_samples"].get<double>(), 880.64 * 0.5 / 4096 / 3600 * 1e6, 1e-9);
  // 1e9 tokens at 8192 x 512 tokens/s = 238.418579... s; cost = 880.64 USD/h for that long.
  EXPECT_NEAR(row["train_time_s"].get<double>(), 1e9 / (8192.0 * 512), 1e-9);
  EXPECT_NEAR(row["train_cost"].get<double>(), 880.64 * 1e9 / (8192.0 * 512) / 3600, 1e-9);
  // Memory absent from the report: unknown, not guessed.
  EXPECT_TRUE(row["memory_per_gpu_bytes"].is_null());
  EXPECT_TRUE(row["fits"].is_null());
  // No price: cost unknown; no baseline: scaling unknown.
  f.price_per_gpu_hour = 0;
  Json r2 = compare_row({0, 16}, opt, rep, nullptr, f, {Target::SAMPLES, 1e6});
  EXPECT_TRUE(r2["price_per_hour"].is_null());
  EXPECT_TRUE(r2["cost_per_million_samples"].is_null());
  EXPECT_TRUE(r2["train_cost"].is_null());
  EXPECT_TRUE(r2["scaling_efficiency"].is_null());
  EXPECT_TRUE(r2["baseline_fits"].is_null());
  EXPECT_NEAR(r2["train_time_s"].get<double>(), 1e6 / 8192.0, 1e-12);
  // The baseline's memory fit travels with the scaling figure: unknown when its report has none,
  // and false when one GPU cannot hold the job (the figure is then against a run nobody can make).
  EXPECT_TRUE(row["baseline_fits"].is_null());
  Json unfit = base;
  unfit["fits"] = false;
  EXPECT_EQ(compare_row({0, 16}, opt, rep, &unfit, f, t)["baseline_fits"], Json(false));
  unfit["fits"] = true;
  EXPECT_EQ(compare_row({0, 16}, opt, rep, &unfit, f, t)["baseline_fits"], Json(true));
  // Tokens asked of a model without a sequence length: time unknown.
  Json r3 = compare_row({0, 16}, opt, fake_report(16, 8, 0.5, 32), nullptr, f, t);
  EXPECT_TRUE(r3["tokens_per_s"].is_null());
  EXPECT_TRUE(r3["train_time_s"].is_null());
}

TEST(CompareBest, RowsThatDoNotFitAreExcluded) {
  auto a = parse_cluster_option("a=dgx-h100");
  auto b = parse_cluster_option("b=dgx-a100");
  OptionFacts priced, free_;
  priced.price_per_gpu_hour = 2;
  Json rows = Json::array();
  Json fast = fake_report(4, 8, 0.1, 32);  // fastest, but does not fit
  fast["memory_per_gpu_bytes"] = 100e9;
  fast["gpu_memory_bytes"] = 80e9;
  fast["fits"] = false;
  rows.push_back(compare_row({0, 4}, a, fast, nullptr, priced, {}));
  rows.push_back(compare_row({0, 2}, a, fake_report(2, 8, 0.2, 32), &rows[0]["run"], priced, {}));
  Json fits = fake_report(4, 8, 0.15, 32);
  fits["fits"] = true;
  rows.push_back(compare_row({1, 4}, b, fits, nullptr, free_, {}));
  rows.push_back(failed_row({1, 8}, b, "boom", 1));
  Json best = mark_best(rows);
  EXPECT_EQ(best["fastest"], 2);   // row 0 is faster but does not fit
  EXPECT_EQ(best["cheapest"], 1);  // the only priced row that fits
  // Scaling efficiency is shown, never ranked (the slowest GPU scales best).
  EXPECT_FALSE(best.contains("best scaling"));
  EXPECT_EQ(rows[2]["best"], Json::array({"fastest"}));
  EXPECT_TRUE(rows[0]["best"].empty());
  EXPECT_FALSE(rows[3].contains("best"));

  auto out = render("s.json", {a, b}, {}, {}, rows, Json::array({Json::object(), Json{{"error", "x"}}}));
  EXPECT_NE(out.table.find("does not fit: excluded from best"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("FAILED (exit 1): boom"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("mem/GPU"), std::string::npos);
  EXPECT_NE(out.table.find("<- fastest"), std::string::npos);
  EXPECT_NE(out.table.find("no price in the cluster file of b"), std::string::npos) << out.table;
  // One CSV line per row plus the header; the failed row keeps its error.
  EXPECT_EQ(std::count(out.csv.begin(), out.csv.end(), '\n'), 5);
  EXPECT_NE(out.csv.find(",boom,1\n"), std::string::npos) << out.csv;
  EXPECT_EQ(out.json["best"], best);
  EXPECT_EQ(out.json["failed"], 1);
  // Deterministic: the same rows render the same bytes.
  auto again = render("s.json", {a, b}, {}, {}, rows, Json::array({Json::object(), Json{{"error", "x"}}}));
  EXPECT_EQ(again.table, out.table);
  EXPECT_EQ(again.csv, out.csv);
  EXPECT_EQ(again.json.dump(), out.json.dump());
}

TEST(CompareBest, FiguresEqualToNineDigitsAreATieTheFirstRowWins) {
  auto a = parse_cluster_option("a=dgx-h100");
  Json rows = Json::array();
  rows.push_back(compare_row({0, 4}, a, fake_report(4, 8, 0.1, 32), nullptr, {}, {}));
  rows.push_back(compare_row({0, 4}, a, fake_report(4, 8, 0.1 * (1 - 1e-12), 32), nullptr, {}, {}));
  rows.push_back(compare_row({0, 4}, a, fake_report(4, 8, 0.1 * (1 + 1e-6), 32), nullptr, {}, {}));
  EXPECT_EQ(mark_best(rows)["fastest"], 0);
  Json rows2 = Json::array();
  rows2.push_back(rows[0]["run"]);
  rows2[0] = compare_row({0, 4}, a, fake_report(4, 8, 0.1, 32), nullptr, {}, {});
  rows2.push_back(compare_row({0, 4}, a, fake_report(4, 8, 0.1 * (1 - 1e-6), 32), nullptr, {}, {}));
  EXPECT_EQ(mark_best(rows2)["fastest"], 1);  // a real difference wins
}

// A finished row for the why block: step time split into compute and exposed comm, with the link
// classes the run report would carry.
Json why_row(const std::string& label, double compute, double exposed, Json links = Json::array(),
             Json busiest = nullptr) {
  auto opt = parse_cluster_option(label + "=dgx-h100");
  Json rep = fake_report(4, 8, compute + exposed, 32);
  rep["compute_only_s"] = compute;
  rep["exposed_comm_s"] = exposed;
  rep["links"] = links;
  rep["busiest_link"] = busiest;
  rep["gpu"] = "h100-sxm";
  return compare_row({0, 4}, opt, rep, nullptr, {}, {});
}

TEST(CompareWhy, NamesTheMechanismOfEachDifference) {
  const Json best = why_row("best", 0.100, 0.010);
  // Compute: 20 ms more GPU work of a 21 ms difference.
  EXPECT_EQ(explain_difference(why_row("slowgpu", 0.120, 0.011), best)["kind"], "compute");
  // The part that differs most is named when it is most of the compute difference: 15 of 20 ms
  // in the optimizer step (an optimizer sharded over fewer GPUs), 5 ms in the backward pass.
  {
    Json slow = why_row("hsdp", 0.120, 0.011), base = why_row("best", 0.100, 0.010);
    slow["run"]["optimizer_s"] = 0.020;
    base["run"]["optimizer_s"] = 0.005;
    slow["run"]["backward_compute_s"] = 0.065;
    base["run"]["backward_compute_s"] = 0.060;
    const std::string t = explain_difference(slow, base)["text"];
    EXPECT_NE(t.find("(both h100-sxm); mostly the optimizer step (20.000 ms vs 5.000 ms)"), std::string::npos) << t;
    // Spread over three parts (8 + 6 + 6 ms): none is most of the 20 ms, none is named.
    slow["run"]["optimizer_s"] = 0.013;
    slow["run"]["backward_compute_s"] = 0.066;
    slow["run"]["forward_s"] = 0.036;
    base["run"]["forward_s"] = 0.030;
    const std::string even = explain_difference(slow, base)["text"];
    EXPECT_EQ(even.find("mostly"), std::string::npos) << even;
  }
  // ECMP: the busiest leaf uplink carries 3x its class's mean.
  Json ecmp_links =
      Json::array({{{"class", "leaf up"},
                    {"bytes", 800.0},
                    {"bytes_per_link", 100.0},
                    {"busiest_link", {{"name", "leaf0>spine1"}, {"bytes", 300.0}, {"utilisation", 0.9}}}}});
  const Json e = explain_difference(
      why_row("ecmp", 0.100, 0.030, ecmp_links, {{"class", "leaf up"}, {"name", "leaf0>spine1"}, {"utilisation", 0.9}}),
      best);
  EXPECT_EQ(e["kind"], "ecmp-collisions") << e.dump();
  EXPECT_NE(e["text"].get<std::string>().find("leaf0>spine1"), std::string::npos) << e.dump();
  // An even spread on a busy NIC: the bottleneck link class is named.
  Json nic_links = Json::array({{{"class", "nic up"},
                                 {"bytes", 800.0},
                                 {"bytes_per_link", 100.0},
                                 {"busiest_link", {{"name", "nic3"}, {"bytes", 101.0}, {"utilisation", 0.8}}}}});
  const Json b = explain_difference(
      why_row("nic", 0.100, 0.030, nic_links, {{"class", "nic up"}, {"name", "nic3"}, {"utilisation", 0.8}}), best);
  EXPECT_EQ(b["kind"], "bottleneck-link") << b.dump();
  EXPECT_NE(b["text"].get<std::string>().find("nic up"), std::string::npos) << b.dump();
  // Links mostly idle while comm is exposed: latency-bound buckets.
  EXPECT_EQ(explain_difference(
                why_row("lat", 0.100, 0.030, nic_links, {{"class", "nic up"}, {"name", "nic3"}, {"utilisation", 0.05}}),
                best)["kind"],
            "latency-bound");
  // Does not fit: memory, whatever its speed.
  Json nofit = why_row("big", 0.100, 0.011);
  nofit["fits"] = false;
  EXPECT_EQ(explain_difference(nofit, best)["kind"], "memory");
}

TEST(CompareWhy, FsdpNamesWhichUnitCollectivesStayExposed) {
  // HYBRID_SHARD vs FULL_SHARD: the all-gathers stay in the node, the gradient reductions cross
  // it; two units each: exposed all-gathers 1 + 1 ms vs 2 + 2 ms, reductions 10 + 10 vs 3 + 3 ms.
  auto fsdp_row = [](const std::string& label, double ag, double rd) {
    Json r = why_row(label, 0.100, 2 * (ag + rd));
    Json units = Json::array();
    for (int u = 0; u < 2; ++u) units.push_back({{"allgather_exposed_s", ag}, {"reduce_exposed_s", rd}});
    r["run"]["fsdp"] = "FSDP2 fully_shard";
    r["run"]["fsdp_units"] = units;
    return r;
  };
  const Json full = fsdp_row("full", 0.002, 0.003), hybrid = fsdp_row("hybrid", 0.001, 0.010);
  const Json e = explain_difference(hybrid, full);
  EXPECT_EQ(e["kind"], "fsdp") << e.dump();
  const std::string t = e["text"].get<std::string>();
  EXPECT_EQ(t.rfind("FSDP gradient reductions: exposed all-gathers 2.000 ms vs 4.000 ms, exposed reductions "
                    "(reduce-scatter, replica all-reduce) 20.000 ms vs 6.000 ms",
                    0),
            0u)
      << t;
  // More exposed comm, but neither kind of unit collective grows (the difference lies elsewhere):
  // the generic reasons, not FSDP's.
  Json less = fsdp_row("less", 0.001, 0.002);
  less["exposed_comm_s"] = 0.030;
  less["step_time_s"] = 0.130;
  const Json l = explain_difference(less, full);
  EXPECT_NE(l["kind"], "fsdp") << l.dump();
  EXPECT_NE(l["kind"], "other") << l.dump();
  // More exposed all-gathers than reductions: the all-gathers are named.
  EXPECT_EQ(explain_difference(fsdp_row("slowag", 0.010, 0.003), full)["text"].get<std::string>().rfind(
                "FSDP parameter all-gathers", 0),
            0u);
}

TEST(CompareWhy, TiesAreNotedWithTheirReason) {
  // Two fabrics (a 2:1 fat-tree option and the ideal switch) that simulate the very same step:
  // no bytes cross a leaf's uplinks (packed placement), so the spines never matter.
  Json rows = Json::array();
  rows.push_back(why_row("ideal", 0.100, 0.010));
  Json ft =
      why_row("ft21", 0.100, 0.010, Json::array({{{"class", "leaf up"}, {"bytes", 0.0}, {"bytes_per_link", 0.0}}}));
  ft["set"] = Json::array({"fabric.topology=fat_tree", "fabric.oversubscription=2:1"});
  ft["bom"]["topology"] = "fat_tree";
  rows.push_back(ft);
  rows.push_back(why_row("slow", 0.150, 0.010));
  const Json best = mark_best(rows);
  ASSERT_TRUE(best["ties"].contains("fastest")) << best.dump();
  EXPECT_EQ(best["ties"]["fastest"]["rows"], Json::array({0, 1}));
  EXPECT_NE(best["ties"]["fastest"]["reason"].get<std::string>().find("no step traffic crosses a leaf's uplinks"),
            std::string::npos)
      << best.dump();
  EXPECT_EQ(rows[0]["best"], Json::array({"fastest (tie)"}));
  EXPECT_TRUE(rows[2]["best"].empty());
  const Json why = why_block(rows, std::nullopt);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0]["others"][0]["kind"], "tie");
  EXPECT_EQ(why[0]["others"][1]["kind"], "compute");
  auto out = render("s.json", {parse_cluster_option("x=dgx-h100")}, {}, {}, rows, Json::array());
  EXPECT_NE(out.table.find("fastest: a tie, any of ideal x4, ft21 x4 within 1 %"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("why (each option against the fastest at the same node count)"), std::string::npos)
      << out.table;
  // Same figures to the last digit but one fabric carrying spine traffic: identical, no placement claim.
  rows[1]["run"]["links"][0]["bytes"] = 10.0;
  EXPECT_EQ(tie_reason(rows, {0, 1}).find("no step traffic"), std::string::npos);
}

TEST(CompareRow, AMissingFigureIsAnErrorNotZero) {
  auto opt = parse_cluster_option("a=dgx-h100");
  Json rep = fake_report(4, 8, 0.1, 32);
  rep.erase("samples_per_s");
  try {
    compare_row({0, 4}, opt, rep, nullptr, {}, {});
    FAIL() << "a report without samples_per_s made a row";
  } catch (const core::SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("samples_per_s"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--cluster a=dgx-h100"), std::string::npos) << e.what();
  }
  Json base = fake_report(1, 1, 0.1, 32);
  base.erase("world_size");
  EXPECT_THROW(compare_row({0, 4}, opt, fake_report(4, 8, 0.1, 32), &base, {}, {}), core::SimulationError);
}

TEST(CompareFacts, FatTreeBillOfMaterialsByHand) {
  config::ClusterSpec c;
  c.name = "x";
  c.nodes = 16;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  config::LinkSpec l;
  l.bandwidth = 50e9;
  c.inter_link = l;
  c.price_per_gpu_hour = 3;
  c.inter_fabric.topology = config::FabricTopology::FAT_TREE;
  c.inter_fabric.nics_per_leaf = 32;
  c.inter_fabric.switch_radix = 64;
  // 16 servers x 8 NICs = 128 NIC cables; 4 servers (32 NICs) per leaf: 4 leaves; 1:1 gives each
  // leaf 32 uplinks, 128 in all, on spines of 64 ports taking one uplink of each of the 4 leaves
  // per lane: 64 / 4 = 16 lanes a spine, 32 lanes / 16 = 2 spines.
  auto f = option_facts(c);
  EXPECT_TRUE(f.has_fabric);
  EXPECT_EQ(f.topology, "fat_tree");
  EXPECT_EQ(f.bom.nics, 128);
  EXPECT_EQ(f.bom.leaves, 4);
  EXPECT_EQ(f.bom.spines, 2);
  EXPECT_EQ(f.bom.cables_nic_leaf, 128);
  EXPECT_EQ(f.bom.cables_leaf_spine, 128);
  EXPECT_FALSE(f.capex_priced);
  c.inter_fabric.price_per_switch = 1000;
  c.inter_fabric.price_per_cable = 10;
  f = option_facts(c);
  EXPECT_TRUE(f.capex_priced);
  EXPECT_DOUBLE_EQ(f.bom.capex, 6 * 1000 + 256 * 10);
}

TEST(CompareFacts, PlacementNotGuaranteedAsksForTheScatteredRun) {
  config::ClusterSpec c;
  c.name = "rented";
  c.nodes = 16;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  config::LinkSpec l;
  l.bandwidth = 50e9;
  c.inter_link = l;
  c.inter_fabric.topology = config::FabricTopology::FAT_TREE;
  c.inter_fabric.nics_per_leaf = 32;  // 4 servers a leaf
  c.inter_fabric.switch_radix = 64;
  // Guaranteed (the default): no scattered run.
  auto f = option_facts(c);
  EXPECT_EQ(f.placement, "packed");
  EXPECT_TRUE(f.placement_guaranteed);
  EXPECT_TRUE(f.scattered_set.empty());
  // Not guaranteed: 16 nodes each alone under a leaf: 16 x 4 = 64 servers wired, spread.
  c.inter_fabric.placement_guaranteed = false;
  f = option_facts(c);
  EXPECT_FALSE(f.placement_guaranteed);
  EXPECT_EQ(f.scattered_set, (std::vector<std::string>{"fabric.placement=spread", "fabric.servers=64"}));
  // One node: no inter-node traffic, nothing to scatter.
  c.nodes = 1;
  EXPECT_TRUE(option_facts(c).scattered_set.empty());
  // 128 nodes scattered on a two-tier tree: 128 leaves exceed a 64-port spine; said, not run.
  c.nodes = 128;
  f = option_facts(c);
  EXPECT_TRUE(f.scattered_set.empty());
  EXPECT_NE(f.scattered_note.find("cannot be wired"), std::string::npos) << f.scattered_note;
}

// A row whose placement is not guaranteed, with its scattered run `slower` (relative) slower, the
// extra time exposed communication on leaf uplinks whose busiest link carries 3x the class mean.
Json rented_row(const std::string& label, double slower) {
  auto opt = parse_cluster_option(label + "=dgx-h100");
  Json rep = fake_report(4, 8, 0.110, 32);
  rep["compute_only_s"] = 0.100;
  rep["exposed_comm_s"] = 0.010;
  rep["gpu"] = "h100-sxm";
  OptionFacts f;
  f.has_fabric = true;
  f.topology = "fat_tree";
  f.placement = "packed";
  f.placement_guaranteed = false;
  f.scattered_set = {"fabric.placement=spread", "fabric.servers=16"};
  Json row = compare_row({0, 4}, opt, rep, nullptr, f, {});
  Json sc = rep;
  sc["step_time_s"] = 0.110 * (1 + slower);
  sc["exposed_comm_s"] = 0.010 + 0.110 * slower;
  sc["links"] = Json::array({{{"class", "leaf up"},
                              {"bytes", 800.0},
                              {"bytes_per_link", 100.0},
                              {"busiest_link", {{"name", "leaf0>spine1"}, {"bytes", 300.0}, {"utilisation", 0.9}}}}});
  sc["busiest_link"] = {{"class", "leaf up"}, {"name", "leaf0>spine1"}, {"utilisation", 0.9}};
  attach_scattered(row, &sc, "");
  return row;
}

TEST(ComparePlacement, RangeShownWhereScatteringMattersAndNotWhereItDoesNot) {
  Json rows = Json::array();
  rows.push_back(rented_row("matters", 0.20));  // +20 % scattered: beyond the 1 % tie threshold
  rows.push_back(rented_row("hidden", 0.005));  // +0.5 %: within it
  placement_ranges(rows, std::nullopt);
  const Json& m = rows[0]["placement"];
  EXPECT_TRUE(m["matters"].get<bool>()) << m.dump();
  EXPECT_DOUBLE_EQ(m["range_s"][0].get<double>(), 0.110);
  EXPECT_DOUBLE_EQ(m["range_s"][1].get<double>(), 0.110 * 1.20);
  EXPECT_NEAR(m["relative"].get<double>(), 0.20, 1e-12);
  EXPECT_EQ(m["tolerance_source"], "default");
  EXPECT_EQ(m["why"]["kind"], "ecmp-collisions") << m.dump();
  const Json& h = rows[1]["placement"];
  EXPECT_FALSE(h["matters"].get<bool>()) << h.dump();
  EXPECT_FALSE(h.contains("why"));
  // --tolerance 25 %: the 20 % no longer matters.
  Json rows2 = Json::array({rented_row("matters", 0.20)});
  placement_ranges(rows2, 0.25);
  EXPECT_FALSE(rows2[0]["placement"]["matters"].get<bool>());
  // The text: the assumed placement of each row, the range where it matters, none where it does not.
  auto out = render("s.json", {parse_cluster_option("x=dgx-h100")}, {}, {},
                    Json::array({rented_row("matters", 0.20), rented_row("hidden", 0.005)}), Json::array());
  EXPECT_NE(out.table.find("110.000 ms..132.000 ms"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("matters x4: assumes packed; the provider does not guarantee placement"), std::string::npos)
      << out.table;
  EXPECT_NE(out.table.find("beyond the 1 % tie threshold): ECMP collisions"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("within the 1 % tie threshold: placement does not matter here"), std::string::npos)
      << out.table;
  EXPECT_EQ(out.table.find("110.000 ms..110."), std::string::npos) << out.table;  // no range for "hidden"
  EXPECT_NE(out.csv.find("placement_assumed,placement_guaranteed,scattered_step_time_s,placement_matters"),
            std::string::npos);
}

TEST(ComparePlacement, ATieHiddenByPlacementSaysSoAndNamesTheMechanism) {
  // Two options tie as packed; one of them, scattered, is 20 % slower on ECMP collisions.
  Json rows = Json::array();
  Json ideal = why_row("ideal", 0.100, 0.010);
  rows.push_back(ideal);
  rows.push_back(rented_row("rented", 0.20));
  const auto out = render("s.json", {parse_cluster_option("x=dgx-h100")}, {}, {}, rows, Json::array());
  EXPECT_NE(out.table.find("fastest: a tie, any of ideal x4, rented x4"), std::string::npos) << out.table;
  EXPECT_NE(out.table.find("but only as placed: the provider does not guarantee the placement, and scattered over "
                           "the fabric rented x4 (as placed: packed) is +20.0 % scattered (ECMP collisions"),
            std::string::npos)
      << out.table;
  // Without the scattered difference the tie reason carries no placement caveat.
  Json plain = Json::array({why_row("a", 0.100, 0.010), rented_row("b", 0.001)});
  placement_ranges(plain, std::nullopt);
  EXPECT_EQ(tie_reason(plain, {0, 1}).find("only as placed"), std::string::npos);
}

TEST(ComparePlacement, AWhyOfASlowerRentedRowAddsItsScatteredDifference) {
  Json rows = Json::array({why_row("fast", 0.050, 0.010), rented_row("rented", 0.20)});
  placement_ranges(rows, std::nullopt);
  const Json why = why_block(rows, std::nullopt);
  ASSERT_EQ(why.size(), 1u);
  const std::string t = why[0]["others"][0]["text"].get<std::string>();
  EXPECT_NE(t.find("; scattered over the fabric +20.0 % more (ecmp-collisions)"), std::string::npos) << t;
}

TEST(CompareWhy, OversubscribedUplinksAreNamedAsSpineOversubscription) {
  const Json best = why_row("best", 0.100, 0.010);
  Json links = Json::array({{{"class", "leaf up"},
                             {"bytes", 800.0},
                             {"bytes_per_link", 100.0},
                             {"busiest_link", {{"name", "leaf0>spine1"}, {"bytes", 110.0}, {"utilisation", 0.95}}}}});
  Json r =
      why_row("over", 0.100, 0.030, links, {{"class", "leaf up"}, {"name", "leaf0>spine1"}, {"utilisation", 0.95}});
  r["bom"]["leaf_oversubscription"] = 2.0;
  const Json e = explain_difference(r, best);
  EXPECT_EQ(e["kind"], "spine-oversubscription") << e.dump();
  EXPECT_NE(e["text"].get<std::string>().find("2:1 oversubscribed"), std::string::npos) << e.dump();
  r["bom"]["leaf_oversubscription"] = 1.0;  // non-blocking: the plain bottleneck
  EXPECT_EQ(explain_difference(r, best)["kind"], "bottleneck-link");
}

}  // namespace
}  // namespace ddpsim::compare
