// `ddpsim compare` end to end on a small case: the table, CSV, JSON and PNG it writes, that each
// row is the very `ddpsim run` report of its option, the arithmetic of its derived columns, its
// determinism, and the exit codes of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_reader.hpp"
#include "sim/cli_support.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;
using testing::run_cli;

fs::path temp_dir(const std::string& name) { return testing::temp_dir("compare-" + name); }

using testing::slurp;

// ResNet-50 at batch 8 on 1 and 2 nodes of three options: a priced cloud preset, a bundled
// cluster, and a cluster with a 2:1 fat-tree given as option overrides.
const std::string kArgs =
    "compare default --set training.batch_size=8 --nodes 1,2 --cluster p4d --cluster dgx-a100 "
    "--cluster 'ndr21=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=8,fabric.oversubscription=2:1' "
    "--samples 1e6 -q";

TEST(Compare, TableCsvJsonAreTheRunsReports) {
  const fs::path d = temp_dir("main");
  auto r = run_cli(kArgs + " -j 4 --json " + (d / "c.json").string() + " --csv " + (d / "c.csv").string());
  ASSERT_EQ(r.code, 0) << r.out;
  // The table: a header with the columns, every option, a best mark, the bill of materials.
  for (const char* s : {"option",
                        "nodes",
                        "GPUs",
                        "step time",
                        "samples/s",
                        "scaling",
                        "overlap",
                        "exposed comm",
                        "mem/GPU",
                        "fits",
                        "$/h",
                        "$/M samples",
                        "time to 1M samples",
                        "p4d",
                        "dgx-a100",
                        "ndr21",
                        "<- ",
                        "fabric bill of materials",
                        "fat_tree",
                        "single_switch (ideal)"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;

  const Json doc = core::read_json_file((d / "c.json").string());
  ASSERT_EQ(doc["rows"].size(), 6u);
  ASSERT_EQ(doc["options"].size(), 3u);
  EXPECT_EQ(doc["failed"], 0);
  // Each row's figures are its option's own `ddpsim run` report: run one by hand.
  auto one = run_cli("run default --set training.batch_size=8 --set cluster=p4d --set nodes=2 --json - -q");
  ASSERT_EQ(one.code, 0) << one.out;
  const Json run = Json::parse(one.out.substr(0, one.out.rfind('}') + 1));
  const Json& p4d2 = doc["rows"][1];
  ASSERT_EQ(p4d2["option"], "p4d");
  ASSERT_EQ(p4d2["nodes"], 2);
  EXPECT_EQ(p4d2["step_time_s"], run["step_time_s"]);
  EXPECT_EQ(p4d2["samples_per_s"], run["samples_per_s"]);
  EXPECT_EQ(p4d2["world_size"], 16);
  // Cost per million samples = price x time / samples, from the row's own figures: p4d is 4.10
  // USD per GPU-hour (configs/clusters/p4d.json), 16 GPUs, 8 samples per GPU per step.
  const double step = p4d2["step_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(p4d2["price_per_hour"].get<double>(), 4.10 * 16);
  EXPECT_NEAR(p4d2["cost_per_million_samples"].get<double>(), 4.10 * 16 * step / 3600.0 / (16 * 8) * 1e6,
              1e-9 * p4d2["cost_per_million_samples"].get<double>());
  EXPECT_NEAR(p4d2["train_time_s"].get<double>(), 1e6 / (16 * 8 / step), 1e-9 * p4d2["train_time_s"].get<double>());
  // Scaling against the option's own 1-GPU run.
  auto base = run_cli(
      "run default --set training.batch_size=8 --set cluster=p4d --set nodes=1 --set gpus_per_node=1 --json - -q");
  ASSERT_EQ(base.code, 0) << base.out;
  const Json b = Json::parse(base.out.substr(0, base.out.rfind('}') + 1));
  EXPECT_EQ(doc["options"][0]["baseline_1gpu"]["samples_per_s"], b["samples_per_s"]);
  EXPECT_NEAR(p4d2["scaling_efficiency"].get<double>(),
              run["samples_per_s"].get<double>() / 16 / b["samples_per_s"].get<double>(), 1e-12);
  // Unpriced options have no cost; the best cheapest is a priced row.
  EXPECT_TRUE(doc["rows"][2]["cost_per_million_samples"].is_null());
  ASSERT_TRUE(doc["best"]["cheapest"].is_number());
  EXPECT_EQ(doc["rows"][doc["best"]["cheapest"].get<size_t>()]["option"], "p4d");
  ASSERT_TRUE(doc["best"]["fastest"].is_number());
  // The 2:1 fat-tree's bill of materials: 2 DGX H100 of 8 NICs, one server per 8-port leaf.
  const Json& ndr2 = doc["rows"][5];
  ASSERT_EQ(ndr2["option"], "ndr21");
  EXPECT_EQ(ndr2["bom"]["topology"], "fat_tree");
  EXPECT_EQ(ndr2["bom"]["nics"], 16);
  EXPECT_EQ(ndr2["bom"]["leaves"], 2);
  EXPECT_EQ(ndr2["bom"]["cables_leaf_spine"], 2 * 4);  // 8 down / 2 = 4 uplinks per leaf
  // Memory per GPU and fit: shown when the run report has them, unknown ("-", null) otherwise.
  for (const auto& row : doc["rows"]) EXPECT_EQ(row["fits"].is_null(), !row["run"].contains("fits")) << row["label"];

  const std::string csv = slurp(d / "c.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_EQ(csv.rfind("label,option,cluster,set,nodes,world_size,step_time_s,samples_per_s,", 0), 0u) << csv;

  // Deterministic: one child at a time writes the same bytes as four.
  auto again = run_cli(kArgs + " -j 1 --json " + (d / "c1.json").string() + " --csv " + (d / "c1.csv").string());
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(slurp(d / "c1.json"), slurp(d / "c.json"));
  EXPECT_EQ(slurp(d / "c1.csv"), csv);
  EXPECT_EQ(again.out, r.out);
  fs::remove_all(d);
}

TEST(Compare, PlotIsAPng) {
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0 &&
      std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no Python with matplotlib";
  const fs::path d = temp_dir("plot");
  auto r = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=analytic --nodes 2 --cluster p4d "
      "--cluster dgx-a100 -q --plot " +
      (d / "c.png").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string png = slurp(d / "c.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "c.png");  // no temporaries left
  fs::remove_all(d);
}

TEST(Compare, BadInputExitsTwoNamingIt) {
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"compare default --cluster nosuch", "--cluster nosuch"},
      {"compare default --cluster dgx-a100 --nodes 1,x", "--nodes 1,x: x is not allowed"},
      {"compare default --cluster dgx-a100 --nodes 0", "--nodes 0"},
      {"compare default --cluster dgx-a100 --cluster dgx-a100", "given twice"},
      {"compare default --cluster 'dgx-h100:fabric.oversubscription=1:2'", "fabric/oversubscription"},
      {"compare default --cluster 'dgx-h100:cluster.inter_node.nics_per_node=0'", "nics_per_node"},
      {"compare default --cluster dgx-a100 --samples 1 --tokens 1", "excludes"},
      {"compare default", "--cluster"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args + " -q");
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST(Compare, ClusterFieldOverridesMakeDistinctOptions) {
  // Two NICs per DGX H100 instead of eight, as an option of its own: less inter-node bandwidth
  // can never make the step faster.
  auto r = run_cli(
      "compare default --set training.batch_size=8 --nodes 4 --cluster dgx-h100 "
      "--cluster 'two-nics=dgx-h100:cluster.inter_node.nics_per_node=2' -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  ASSERT_EQ(doc["rows"].size(), 2u);
  EXPECT_EQ(doc["rows"][0]["bom"]["nics"], 32);
  EXPECT_EQ(doc["rows"][1]["bom"]["nics"], 8);
  EXPECT_GE(doc["rows"][1]["step_time_s"].get<double>(), doc["rows"][0]["step_time_s"].get<double>());
}

}  // namespace
}  // namespace ddpsim
