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
  // Unpriced options have no cost (dgx-a100 has neither a rent nor an ownership block).
  EXPECT_TRUE(doc["rows"][2]["cost_per_million_samples"].is_null());
  // dgx-h100 is owned (configs/clusters/dgx-h100.json "ownership"): 270000 USD per server over
  // 4 years of 8760 hours plus 10.2 kW x PUE 1.58 x 0.0806 USD/kWh per server-hour, per 8 GPUs:
  // (270000 / 35040 + 1.2989496) / 8 = 1.12555 USD per GPU-hour whatever the server count (the
  // fabric is not priced). At that price, faster H100s beat p4d's 4.10 USD A100 rent per sample.
  for (size_t i : {4u, 5u}) {
    const Json& r = doc["rows"][i];
    ASSERT_EQ(r["option"], "ndr21");
    EXPECT_EQ(r["price_source"], "ownership");
    EXPECT_NEAR(r["price_per_gpu_hour"].get<double>(), (270000.0 / 35040 + 10.2 * 1.58 * 0.0806) / 8, 1e-12);
    EXPECT_TRUE(r["ownership"]["fabric_capex"].is_null());
  }
  EXPECT_EQ(doc["rows"][1]["price_source"], "rent");
  ASSERT_TRUE(doc["best"]["cheapest"].is_number());
  EXPECT_EQ(doc["rows"][doc["best"]["cheapest"].get<size_t>()]["option"], "ndr21");
  EXPECT_NE(r.out.find("$/h of ndr21 x2: owned: 2 servers x $270000 + fabric not priced over 4 years"),
            std::string::npos)
      << r.out;
  ASSERT_TRUE(doc["best"]["fastest"].is_number());
  EXPECT_FALSE(doc["best"].contains("best scaling"));
  // The why block: every other option at each node count against that count's fastest.
  ASSERT_EQ(doc["why"].size(), 2u);
  EXPECT_NE(r.out.find("why (each option against the fastest at the same node count)"), std::string::npos) << r.out;
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

// compare runs its options in its own process pool (no `ddpsim run` child): every figure of each
// row's report equals `ddpsim run --json` of the same scenario and overrides, to 1e-12.
TEST(Compare, InProcessRowsEqualDdpsimRun) {
  auto r = run_cli(
      "compare default --set training.batch_size=8 --nodes 2 --cluster p4d "
      "--cluster 'ft=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=8' -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  const std::vector<std::string> sets = {
      "--set cluster=p4d --set nodes=2",
      "--set cluster=dgx-h100 --set fabric.topology=fat_tree --set fabric.nics_per_leaf=8 --set nodes=2"};
  for (size_t i = 0; i < sets.size(); ++i) {
    auto one = run_cli("run default --set training.batch_size=8 " + sets[i] + " --json - -q");
    ASSERT_EQ(one.code, 0) << one.out;
    const Json want = Json::parse(one.out.substr(0, one.out.rfind('}') + 1));
    const Json& got = doc["rows"][i]["run"];
    size_t compared = 0;
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (it.key() == "overrides") continue;  // run's echo of its own --set flags; compare rows name their option
      ASSERT_TRUE(got.contains(it.key())) << it.key();
      if (it.value().is_number()) {
        const double w = it.value().get<double>(), g = got[it.key()].get<double>();
        EXPECT_NEAR(g, w, 1e-12 * std::max(1.0, std::abs(w))) << sets[i] << ": " << it.key();
        ++compared;
      } else {
        EXPECT_EQ(got[it.key()], it.value()) << sets[i] << ": " << it.key();
      }
    }
    EXPECT_GT(compared, 30u);
  }
}

// Packed placement: 2 DGX H100 (8 NICs each) under one 16-port leaf never send a byte over the
// spines, so a 2:1 oversubscribed fat-tree simulates the very step of the ideal switch. The
// options tie and the note says why; a 4-node job on 8-port leaves does cross the spines.
TEST(Compare, TiesAreNotedWithTheReason) {
  auto r = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=flow --nodes 2 "
      "--cluster ideal=dgx-h100 "
      "--cluster 'ft21=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=16,fabric.oversubscription=2:1' -q "
      "--json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  ASSERT_EQ(doc["rows"].size(), 2u);
  // The same step to the flow solver's last digits (the two fabrics' links are summed in another
  // order: 1e-11 relative apart with NCCL's broadcast of the buffers).
  EXPECT_NEAR(doc["rows"][0]["step_time_s"].get<double>(), doc["rows"][1]["step_time_s"].get<double>(),
              1e-9 * doc["rows"][0]["step_time_s"].get<double>());
  ASSERT_TRUE(doc["best"]["ties"].contains("fastest")) << doc["best"].dump();
  EXPECT_NE(
      doc["best"]["ties"]["fastest"]["reason"].get<std::string>().find("no step traffic crosses a leaf's uplinks"),
      std::string::npos)
      << doc["best"].dump();
  EXPECT_EQ(doc["why"][0]["others"][0]["kind"], "tie");
  auto t = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=flow --nodes 2 --cluster ideal=dgx-h100 "
      "--cluster 'ft21=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=16,fabric.oversubscription=2:1' -q");
  ASSERT_EQ(t.code, 0) << t.out;
  // Within the rows' prediction resolution, 3.4 % (report/prediction.cpp).
  EXPECT_NE(t.out.find("fastest: a tie, any of ideal x2, ft21 x2 within 3.4 %"), std::string::npos) << t.out;
}

// Two NICs per DGX H100 instead of eight: the same GPUs (compute equal), so the why block names a
// communication mechanism, never compute.
TEST(Compare, WhyNamesACommunicationMechanismWhenOnlyTheNetworkDiffers) {
  auto r = run_cli(
      "compare default --set training.batch_size=8 --nodes 4 --cluster dgx-h100 "
      "--cluster 'two-nics=dgx-h100:cluster.inter_node.nics_per_node=2' -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  ASSERT_EQ(doc["rows"][0]["compute_only_s"], doc["rows"][1]["compute_only_s"]);
  ASSERT_EQ(doc["why"].size(), 1u);
  const Json& e = doc["why"][0]["others"][0];
  EXPECT_EQ(e["label"], "two-nics x4") << e.dump();
  const std::string kind = e["kind"].get<std::string>();
  EXPECT_TRUE(kind == "bottleneck-link" || kind == "latency-bound" || kind == "ecmp-collisions" ||
              kind == "communication")
      << e.dump();
}

TEST(Compare, HtmlReportHasEveryColumnAndTheBillOfMaterials) {
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0 &&
      std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no Python with matplotlib";
  const fs::path d = temp_dir("html");
  auto r = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=analytic --nodes 2 --cluster p4d "
      "--cluster 'ft=dgx-h100:fabric.topology=fat_tree,fabric.nics_per_leaf=8' -q --samples 1e6 --html " +
      (d / "c.html").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string page = slurp(d / "c.html");
  for (const char* s : {"samples/s", "scaling %", "$/GPU-hour", "$/M samples", "fits", "mem/GPU GiB", "time to train s",
                        "fabric bill of materials", "switches", "cables", "why", "p4d x2", "data:image/png;base64,"})
    EXPECT_NE(page.find(s), std::string::npos) << s;
  for (const auto& e : fs::directory_iterator(d)) EXPECT_EQ(e.path().filename(), "c.html");  // no temporaries left
  fs::remove_all(d);
}

TEST(Compare, RentedPlacementIsRunScatteredAndTheRangeShownWhereItMatters) {
  // 64 nodes of three options at a 1 % tie threshold: OCI's ECMP-hashed Clos and AWS's SRD
  // (adaptive) Clos, both non-blocking with placement not guaranteed, and an owned DGX H100.
  auto r = run_cli(
      "compare default --set training.batch_size=8 --nodes 64 --cluster oci-bm-gpu4 --cluster aws-p5 "
      "--cluster dgx-h100 --tolerance 1 -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  ASSERT_EQ(doc["rows"].size(), 3u);
  const Json& oci = doc["rows"][0]["placement"];
  const Json& aws = doc["rows"][1]["placement"];
  const Json& dgx = doc["rows"][2]["placement"];
  // Each states what it assumed; only the rented ones were run scattered.
  for (const Json* p : {&oci, &aws}) {
    EXPECT_EQ((*p)["assumed"], "packed");
    EXPECT_FALSE((*p)["guaranteed"].get<bool>());
    ASSERT_TRUE((*p)["scattered"].is_object()) << p->dump();
    EXPECT_DOUBLE_EQ((*p)["tolerance"].get<double>(), 0.01);
  }
  // One ideal switch has no placement to assume (as `run` says): null, and no scattered run.
  EXPECT_TRUE(dgx["assumed"].is_null()) << dgx.dump();
  EXPECT_TRUE(dgx["scattered"].is_null());
  // SRD spraying on a non-blocking tree: no uplink is shared, scattered or packed: the same step.
  EXPECT_NEAR(aws["relative"].get<double>(), 0.0, 1e-9) << aws.dump();
  EXPECT_FALSE(aws["matters"].get<bool>());
  // ECMP: scattered, every ring hop crosses a leaf's uplinks and more flows collide.
  EXPECT_GT(oci["relative"].get<double>(), 0.01) << oci.dump();
  EXPECT_TRUE(oci["matters"].get<bool>());
  EXPECT_EQ(oci["why"]["kind"], "ecmp-collisions") << oci["why"].dump();
  // The text says both.
  auto t = run_cli(
      "compare default --set training.batch_size=8 --nodes 64 --cluster oci-bm-gpu4 --cluster aws-p5 "
      "--cluster dgx-h100 --tolerance 1 -q");
  ASSERT_EQ(t.code, 0) << t.out;
  for (const char* s : {"(3 options, 3 runs + 2 scattered)",  // the two rented options' extra runs
                        "placement (each row's figures are for the placement it assumed",
                        "oci-bm-gpu4 x64: assumes packed; the provider does not guarantee placement",
                        "beyond the 1 % tie threshold): ECMP collisions",
                        "aws-p5 x64: assumes packed; the provider does not guarantee placement",
                        "within the 1 % tie threshold: placement does not matter here"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  EXPECT_EQ(t.out.find("dgx-h100 x64: packed"), std::string::npos) << t.out;
}

// Where a row's collectives leave the validated tables by a wide margin (held-out figures of at
// least 20 % there), compare lists it with its band: aws-p5 at 32 nodes (EFA, 124 %) and dgx-h100
// at 8 (InfiniBand, 24 %), not dgx-h100 at 2 nodes (its own table, 7.3 %) nor aws-p5 at 2 (11 %).
TEST(Compare, RowsWhoseCollectivesLeaveTheValidatedTablesAreListedWithTheirBand) {
  auto r = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=analytic --nodes 2,8,32 "
      "--cluster aws-p5 --cluster dgx-h100 -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t at = r.out.find("collectives beyond the validated tables");
  ASSERT_NE(at, std::string::npos) << r.out;
  // The section: its heading and the indented lines after it.
  std::string section;
  {
    std::istringstream in(r.out.substr(at));
    std::string line;
    std::getline(in, section);
    while (std::getline(in, line) && line.rfind("  ", 0) == 0) section += "\n" + line;
  }
  EXPECT_NE(section.find("aws-p5 x32: step "), std::string::npos) << section;
  EXPECT_NE(section.find("could take up to 124 % longer"), std::string::npos) << section;
  EXPECT_NE(section.find("dgx-h100 x8: step "), std::string::npos) << section;
  EXPECT_NE(section.find("could take up to 24 % longer"), std::string::npos) << section;
  EXPECT_EQ(section.find("dgx-h100 x2"), std::string::npos) << section;
  EXPECT_EQ(section.find("aws-p5 x2"), std::string::npos) << section;
  // The JSON rows carry the part: aws-p5 x32's range [-1.24 / 2.24, 1.24] and its reach.
  auto j = run_cli(
      "compare default --set training.batch_size=8 --set simulation.backend=analytic --nodes 32 --cluster aws-p5 "
      "-q --json -");
  ASSERT_EQ(j.code, 0) << j.out;
  const Json doc = Json::parse(j.out.substr(0, j.out.rfind('}') + 1));
  const Json& parts = doc["rows"][0]["prediction"]["parts"];
  ASSERT_EQ(parts.size(), 3u) << parts.dump();
  EXPECT_EQ(parts[2]["part"], "collectives");
  EXPECT_EQ(parts[2]["kind"], "extrapolated");
  EXPECT_NEAR(parts[2]["relative_error_range"][1].get<double>(), 1.24, 1e-12);
  EXPECT_NEAR(parts[2]["relative_error_range"][0].get<double>(), -1.24 / 2.24, 1e-12);
  EXPECT_GT(parts[2]["reach_s"][1].get<double>(), 0.0);
}

// FSDP exists for jobs one GPU cannot hold: Llama-3-8B with AdamW needs ~150 GiB at its peak on
// one H100 (80 GiB) and ~15 GiB per GPU sharded over 8. The scaling column divides by that 1-GPU
// run, so it is marked and the baseline's memory is named; the JSON carries the fit.
TEST(Compare, AScalingFigureAgainstABaselineThatDoesNotFitIsMarked) {
  auto r = run_cli("compare llama3-8b-fsdp-8x-h100 --set simulation.backend=analytic --cluster dgx-h100 -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t note = r.out.find("* the 1-GPU baseline does not fit one GPU's memory: dgx-h100 (");
  ASSERT_NE(note, std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of 80.0 GiB)", note), std::string::npos) << r.out;
  // The row's scaling cell ends with the mark ("112.9%*"): a percent sign followed by '*'.
  EXPECT_NE(r.out.find("%*"), std::string::npos) << r.out;
  auto j = run_cli("compare llama3-8b-fsdp-8x-h100 --set simulation.backend=analytic --cluster dgx-h100 -q --json -");
  ASSERT_EQ(j.code, 0) << j.out;
  const Json doc = Json::parse(j.out.substr(0, j.out.rfind('}') + 1));
  EXPECT_EQ(doc["rows"][0]["baseline_fits"], Json(false)) << doc["rows"][0].dump();
  EXPECT_EQ(doc["rows"][0]["fits"], Json(true));
  const Json& base = doc["options"][0]["baseline_1gpu"];
  EXPECT_EQ(base["fits"], Json(false));
  EXPECT_GT(base["memory_per_gpu_bytes"].get<double>(), base["gpu_memory_bytes"].get<double>());
  // Runs that do not fit share one line per figure pair: LLaMA-7B under plain DDP on two clusters.
  auto nofit = run_cli(
      "compare compare/llama7b-16x8-h100-adamw --set simulation.backend=analytic --nodes 2 --cluster dgx-h100 "
      "--cluster aws-p5 -q");
  ASSERT_EQ(nofit.code, 0) << nofit.out;
  const std::string line = "dgx-h100 x2, aws-p5 x2: needs ";
  const size_t at = nofit.out.find(line);
  ASSERT_NE(at, std::string::npos) << nofit.out;
  EXPECT_EQ(nofit.out.find(": needs ", at + line.size()), std::string::npos) << nofit.out;  // once, not per run
  // A job that fits one GPU gets neither the mark nor the note.
  auto ok =
      run_cli("compare default --set training.batch_size=8 --set simulation.backend=analytic --cluster dgx-a100 -q");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("baseline does not fit"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("%*"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace ddpsim
