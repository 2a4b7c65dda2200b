// Checks the NCCL model against public nccl-tests all_reduce_perf measurements
// (tests/data/nccl-tests, see its README.md for the sources) through the bundled cluster presets
// (configs/clusters): nothing is fitted to the file it is checked against, except in the
// calibrate test, which fits on half of the sizes and checks the other half.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "collectives/nccl_model.hpp"
#include "collectives/nccl_tests_log.hpp"
#include "collectives/topology.hpp"
#include "collectives/validated.hpp"
#include "config/catalog.hpp"
#include "core/json_reader.hpp"
#include "support/builders.hpp"

using namespace ddpsim::collectives;

namespace {

std::filesystem::path data_file(const std::string& name) {
  return std::filesystem::path("tests/data/nccl-tests") / name;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// What each log's run was, besides the hardware: the bundled cluster preset it ran on, the node
// count, nccl-tests -g of each run (from the command lines in the file header; single process
// driving G GPUs vs one MPI rank per GPU) and, where the file does not print it, the NCCL release.
// These are launch/software facts a user knows about their own run, not fitted values.
struct Dataset {
  const char* file;
  const char* preset;
  int nodes;
  std::vector<int> gpus_per_process;  // per run in file order
  const char* nccl_version;           // "" = the log's "NCCL version" line, else current
  // Honest bounds reached by the model (see NOTES.md); the targets are 0.10 / 0.25 / 0.05.
  double max_median_large;
  double max_median_small;
  double max_calibrated_heldout;
};

// The reduce-scatter table's median |busbw error| as achieved, rounded up (NOTES.md "All-gather and
// reduce-scatter"): a regression bound, not a target reached by fitting.
constexpr double kReduceScatterH100Bound = 0.03;
// The A100 broadcast table's medians as achieved (>= 1 MiB 10.7 %, below 12.8 %), rounded up
// (NOTES.md "Broadcast"): regression bounds, nothing was fitted to the table.
constexpr double kBroadcastA100BoundLarge = 0.11, kBroadcastA100BoundSmall = 0.13;
// The 2 x p6-b200 excerpt's six small rows (7.6 % achieved; NOTES.md "EFA through aws-ofi-nccl"
// item 8), rounded up: a regression bound on the EFA step p6 borrows from p5en, not fitted.
constexpr double kP6SmallBound = 0.08;

const std::vector<Dataset>& datasets() {
  // Bounds are the achieved medians rounded up; each one above the 0.10 / 0.25 / 0.05 target is
  // NOT reached (NOTES.md "Per-dataset errors" explains why).
  static const std::vector<Dataset> d = {
      // pip nvidia-nccl-cu12 (version not printed): a current (2.18+) release.
      {"a100-sxm4-80gb_1x8_nvswitch.txt", "dgx-a100", 1, {8, 1}, "", 0.09, 0.09, 0.05},
      // "NCCL version 2.8.3+cuda11.2" is in the file.
      {"aws-p4d_2x8_a100_efa.txt",
       "p4d",
       2,
       {1},
       "",
       1.80 /* target 0.10 NOT reached */,
       5.50 /* target 0.25 NOT reached */,
       0.05},
      {"azure-nc12s-v3_1x2_v100_pcie.txt", "azure-nc12s-v3", 1, {2, 1}, "", 0.05, 0.17, 0.05},
      // Post dated 2019-09-26, version not printed: the release then was 2.4.8 (2.5.6, the first
      // with LL128 and the tuner, came out in November 2019).
      {"v100-sxm2_1x8_nvlink_cube_mesh.txt",
       "dgx1-v100",
       1,
       {8},
       "2.4.8",
       0.11 /* target 0.10 NOT reached */,
       0.23,
       0.05},
  };
  return d;
}

struct Loaded {
  NcclTestsLog log;
  NcclTopology topo;  // from the preset, with the run's NCCL version
};

Loaded load(const Dataset& d) {
  Loaded l;
  l.log = parse_nccl_tests_log_file(data_file(d.file).string());
  const auto cat = ddpsim::test_support::source_catalog();
  auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, d.preset));
  cluster.nodes = d.nodes;
  l.topo = nccl_topology(cluster);
  // The p4d log ran aws-ofi-nccl 1.1.x (NOTES.md "p4d analysis"), which predates the plugin's
  // platform table (reported latency, NCCL_BUFFSIZE; src/platform-aws.c from 1.7): a launch fact.
  if (std::string(d.file) == "aws-p4d_2x8_a100_efa.txt") l.topo.net_plugin = NetPlugin::NONE;
  if (*d.nccl_version)
    l.topo.nccl_version = parse_nccl_version(d.nccl_version);
  else if (l.log.nccl_version)
    l.topo.nccl_version = l.log.nccl_version;
  return l;
}

}  // namespace

namespace {
// >= 1 MiB and below, and the >= 1 MiB rows split at 64 MiB (mid: [1, 64) MiB, big: >= 64 MiB;
// a bin without rows has median -1).
struct Medians {
  double large = 0, small = 0;
  bool has_small = false;
  double mid = -1, big = -1;
};
// The medians of |busbw error| per row, by size class (validated.hpp size_class).
struct Binned {
  std::vector<double> small, large, mid, big;
  void add(double bytes, double abs_err) {
    const SizeClass k = size_class(bytes);
    (k == SizeClass::SMALL ? small : large).push_back(abs_err);
    if (k != SizeClass::SMALL) (k == SizeClass::BIG ? big : mid).push_back(abs_err);
  }
  Medians medians() const {
    Medians m;
    m.large = large.empty() ? 0.0 : median(large);
    m.has_small = !small.empty();
    m.small = m.has_small ? median(small) : 0.0;
    m.mid = mid.empty() ? -1.0 : median(mid);
    m.big = big.empty() ? -1.0 : median(big);
    return m;
  }
};
}  // namespace

// The median |busbw error| of one shared log through its preset (>= 1 MiB, < 1 MiB).
Medians dataset_medians(const Dataset& d) {
  const Loaded l = load(d);
  EXPECT_EQ(l.log.runs.size(), d.gpus_per_process.size());
  Binned b;
  for (size_t run = 0; run < l.log.runs.size() && run < d.gpus_per_process.size(); ++run) {
    NcclTopology topo = l.topo;
    topo.gpus_per_process = d.gpus_per_process[run];
    for (size_t i = 0; i < l.log.runs[run].row_count; ++i) {
      const auto& r = l.log.rows[l.log.runs[run].first_row + i];
      const auto e = predict_allreduce(topo, r.size_bytes);
      const double pred = busbw_allreduce(algbw(r.size_bytes, e.time), topo.nranks);
      const double meas = busbw_allreduce(algbw(r.size_bytes, r.oop_time_us * 1e-6), topo.nranks);
      b.add(r.size_bytes, std::abs(pred - meas) / meas);
    }
  }
  return b.medians();
}

TEST(NcclDatasets, PredictedBusBwFromPresetsMatchesMeasurements) {
  ASSERT_TRUE(std::filesystem::exists(data_file(datasets()[0].file))) << "missing tests/data/nccl-tests";
  for (const auto& d : datasets()) {
    SCOPED_TRACE(d.file);
    const Loaded l = load(d);
    ASSERT_EQ(l.log.runs.size(), d.gpus_per_process.size());
    std::vector<double> large, small;
    for (size_t run = 0; run < l.log.runs.size(); ++run) {
      NcclTopology topo = l.topo;
      topo.gpus_per_process = d.gpus_per_process[run];
      for (size_t i = 0; i < l.log.runs[run].row_count; ++i) {
        const auto& r = l.log.rows[l.log.runs[run].first_row + i];
        const auto e = predict_allreduce(topo, r.size_bytes);
        const double pred = busbw_allreduce(algbw(r.size_bytes, e.time), topo.nranks);
        const double meas = busbw_allreduce(algbw(r.size_bytes, r.oop_time_us * 1e-6), topo.nranks);
        (r.size_bytes >= 1048576 ? large : small).push_back(std::abs(pred - meas) / meas);
        if (std::getenv("DDPSIM_VERBOSE"))
          std::printf("  run %zu %12.0f B  measured %10.2f us  predicted %10.2f us  %s/%s nc=%d  busbw err %+.3f\n",
                      run, r.size_bytes, r.oop_time_us, e.time * 1e6, to_string(e.algo).c_str(),
                      to_string(e.proto).c_str(), e.nchannels, (pred - meas) / meas);
      }
    }
    const double ml = median(large), ms = median(small);
    std::printf("[dataset] %-38s %-15s NCCL %-7s median |busbw err|  >=1MiB %6.3f   <1MiB %6.3f\n", d.file, d.preset,
                nccl_version_string(l.topo.nccl_version).c_str(), ml, ms);
    EXPECT_LE(ml, d.max_median_large);
    EXPECT_LE(ms, d.max_median_small);
  }
}

// As `ddpsim calibrate --holdout`: every run of the file, fit on the even-indexed sizes of each
// run, predict the odd-indexed ones.
TEST(NcclDatasets, CalibrateOnHalfTheSizesPredictsTheOtherHalf) {
  ASSERT_TRUE(std::filesystem::exists(data_file(datasets()[0].file))) << "missing tests/data/nccl-tests";
  for (const auto& d : datasets()) {
    SCOPED_TRACE(d.file);
    const Loaded l = load(d);
    std::vector<CalibrationPoint> train, test;
    for (size_t run = 0; run < l.log.runs.size(); ++run)
      for (size_t i = 0; i < l.log.runs[run].row_count; ++i) {
        const auto& r = l.log.rows[l.log.runs[run].first_row + i];
        (i % 2 == 0 ? train : test).push_back({r.size_bytes, r.oop_time_us * 1e-6, d.gpus_per_process[run]});
      }
    NcclFit fit;
    const NcclTopology t = calibrate(l.topo, train, &fit);
    std::vector<double> err;
    for (const auto& pt : test) {
      NcclTopology u = t;
      u.gpus_per_process = pt.gpus_per_process;
      const auto e = predict_allreduce(u, pt.bytes);
      err.push_back(std::abs(e.time - pt.seconds) / pt.seconds);
      if (std::getenv("DDPSIM_VERBOSE"))
        std::printf("  held-out %12.0f B  measured %10.2f us  fitted %10.2f us  %s/%s  err %+.3f\n", pt.bytes,
                    pt.seconds * 1e6, e.time * 1e6, to_string(e.algo).c_str(), to_string(e.proto).c_str(),
                    e.time / pt.seconds - 1);
    }
    const double med = median(err);
    std::printf(
        "[calibrate] %-38s bw x%.3f latency %+7.2f us  launch %.2f us/GPU  train median %.3f  held-out median %.3f\n",
        d.file, t.achieved_all.bw_factor, t.achieved_all.latency_offset * 1e6, t.launch_overhead * 1e6,
        fit.median_abs_relative_error, med);
    EXPECT_LE(med, d.max_calibrated_heldout);
    // The fit leaves NCCL's pick alone: same (algo, proto) per size before and after.
    for (const auto& pt : test) {
      NcclTopology a = l.topo, b = t;
      a.gpus_per_process = b.gpus_per_process = pt.gpus_per_process;
      EXPECT_EQ(predict_allreduce(a, pt.bytes).proto, predict_allreduce(b, pt.bytes).proto);
      EXPECT_EQ(predict_allreduce(a, pt.bytes).algo, predict_allreduce(b, pt.bytes).algo);
    }
  }
}

// ---- Held-out hardware: published all_reduce_perf tables on other GPUs and fabrics --------------
// tests/data/published_nccl_tests/*.json carry the figures of public logs in our own format, with
// their sources (see each file). Nothing in the model or the presets was fitted to them: they
// check the presets on hardware the four shared logs do not cover.
namespace {

struct Published {
  const char* file;
  const char* preset;
  bool p2p_override = false;  // the log's machine has GPU peer-to-peer (patched driver)
  double max_median_large, max_median_small;
};

std::filesystem::path published_file(const std::string& name) {
  return std::filesystem::path(DDPSIM_SOURCE_DIR) / "tests" / "data" / "published_nccl_tests" / name;
}

}  // namespace

const std::vector<Published>& published_sets() {
  // Bounds are the achieved medians rounded up; each above the 0.10 / 0.25 targets is marked and
  // discussed in sim/collectives/NOTES.md ("Held-out hardware").
  static const std::vector<Published> sets = {
      {"h100-sxm-8x-dgx-nvswitch-1node.json", "dgx-h100", false, 0.03, 0.11},
      // 0.06 before session 6's NVLS node rate (476 instead of 466 GB/s busbw; plateau now +8 %).
      {"h100-sxm-2x8-hgx-ib-ndr-8x400g-default.json", "dgx-h100", false, 0.08, 0.10},
      {"h100-sxm-2x8-ib-400g-ring.json", "dgx-h100", false, 0.11 /* NOT reached */, 0},
      {"a100-sxm4-40gb-2x8-oci-bm-gpu4-roce.json", "oci-bm-gpu4", false, 0.15 /* NOT reached */,
       0.54 /* NOT reached */},
      {"rtx4090-8x-pcie-no-p2p-epyc7542.json", "pcie-4090x8", false, 0.12 /* NOT reached */, 0.08},
      {"rtx4090-8x-pcie-p2p-tinygrad-epyc7542.json", "pcie-4090x8", true, 0.08, 0.05},
      {"aws-p4d-2x8-efa-nccl2.19-ring.json", "p4d", false, 0.03, 0},
      // Added with CollNet and the NVL72 presets (session 5), checked once they were written.
      {"h100-8x8-coreweave-sharp-collnetchain.json", "dgx-h100-sharp", false, 0.02, 0},
      // Session 6: 0.34 / 0.38 / 2.21 before the NVLS node rate and NVLS channel counts (NOTES.md).
      {"gb200-nvl72-1rack-coreweave.json", "gb200-nvl72", false, 0.14 /* NOT reached */, 0},
      {"gb200-nvl72-2racks-coreweave.json", "gb200-nvl72", false, 0.12 /* NOT reached */, 0},
      {"gb200-nvl72-20racks-coreweave.json", "gb200-nvl72", false, 1.71 /* NOT reached */, 0},
      // Session 6: a >= 4-node H100 table without SHARP (default algorithm, NCCL 2.24.3), added
      // after the model change above was written; nothing fitted to it.
      {"h100-sxm-4x8-ib-8x400g-voltagepark-nccl2.24.json", "dgx-h100", false, 0.08, 0.12},
      // Session 6: the 4-node run of nccl-tests#309 (NCCL 2.26.2, default), found after the above.
      {"h100-sxm-4x8-hgx-ib-ndr-8x400g-default-nccl2.26.json", "dgx-h100", false, 0.04, 0.11},
  };
  return sets;
}

// The median |busbw error| of one published table through its preset, with its run's settings.
Medians published_medians(const Published& p) {
  using ddpsim::core::Json;
  const auto cat = ddpsim::test_support::source_catalog();
  const Json doc = ddpsim::core::read_json_file(published_file(p.file).string());
  auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, p.preset));
  cluster.nodes = doc["nodes"].get<int>();
  EXPECT_EQ(cluster.gpus_per_node, doc["gpus_per_node"].get<int>());
  if (p.p2p_override) cluster.p2p = true;
  NcclTopology topo = nccl_topology(cluster);
  const std::string version = doc["nccl_version"].get<std::string>();
  if (!version.empty()) topo.nccl_version = parse_nccl_version(version);
  topo.gpus_per_process = std::max(1, doc["gpus_per_process"].get<int>());
  NcclSettings settings;
  if (doc["env"].contains("NCCL_ALGO")) settings.algos = {parse_algo(doc["env"]["NCCL_ALGO"].get<std::string>())};
  if (doc["env"].contains("NCCL_PROTO")) settings.protos = {parse_proto(doc["env"]["NCCL_PROTO"].get<std::string>())};
  if (doc["env"].contains("NCCL_COLLNET_ENABLE"))
    settings.collnet_enable = doc["env"]["NCCL_COLLNET_ENABLE"].get<std::string>() == "1";
  if (doc["env"].contains("NCCL_MIN_CTAS"))
    settings.min_ctas = std::stoi(doc["env"]["NCCL_MIN_CTAS"].get<std::string>());
  // The p4d run used aws-ofi-nccl 1.7.4 (its source line), whose platform table sets no
  // NCCL_BUFFSIZE (src/platform-aws.c at v1.7.4-aws): that release, so NCCL's 4 MiB, not the
  // current plugin's 8.
  if (std::string(p.file) == "aws-p4d-2x8-efa-nccl2.19-ring.json") {
    topo.net_plugin_version = 10704;
    EXPECT_DOUBLE_EQ(tune_model(topo, settings).simple_buffsize, 4.0 * 1024 * 1024);
  }
  Binned b;
  for (const auto& row : doc["rows"]) {
    const double bytes = row[0].get<double>(), time_us = row[1].get<double>();
    const auto e = predict_allreduce(topo, bytes, settings);
    const double err = e.time > 0 ? (time_us * 1e-6) / e.time - 1 : 0;  // busbw error = measured time / predicted - 1
    b.add(bytes, std::abs(err));
    if (std::getenv("DDPSIM_VERBOSE"))
      std::printf("  %12.0f B  measured %10.2f us  predicted %10.2f us  %s/%s nc=%d  busbw err %+.3f\n", bytes, time_us,
                  e.time * 1e6, to_string(e.algo).c_str(), to_string(e.proto).c_str(), e.nchannels, err);
  }
  return b.medians();
}

TEST(NcclDatasets, PublishedLogsOnOtherHardware) {
  for (const auto& p : published_sets()) {
    SCOPED_TRACE(p.file);
    const Medians m = published_medians(p);
    std::printf("[held-out] %-46s %-12s median |busbw err|  >=1MiB %6.3f   <1MiB %6.3f\n", p.file, p.preset, m.large,
                m.small);
    EXPECT_LE(m.large, p.max_median_large);
    if (m.has_small) {
      EXPECT_LE(m.small, p.max_median_small);
    }
  }
}

namespace {
// The median |busbw error| of a one-node table of collective `func` (a log under
// tests/data/nccl-tests) through `preset` at the log's -g (1 without one), NCCL's pick or the Ring
// forced (`ring`): >= 1 MiB and below. The log's own busbw must be nccl-tests' figure from its time.
Medians function_table_medians(const std::string& file, Func func, const std::string& preset, bool ring) {
  const NcclTestsLog log = parse_nccl_tests_log_file(data_file(file).string());
  const auto cat = ddpsim::test_support::source_catalog();
  auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, preset));
  cluster.nodes = 1;
  NcclTopology topo = nccl_topology(cluster);
  topo.gpus_per_process = std::max(1, log.ngpus);
  NcclSettings settings;
  if (ring) settings.algos = {Algo::RING};
  const int n = cluster.gpus_per_node;
  Binned b;
  for (const auto& r : log.rows) {
    if (!(r.size_bytes > 0)) continue;
    const auto e = predict_collective(func, topo, r.size_bytes, settings);
    const double pred = busbw(func, algbw(r.size_bytes, e.time), n);
    const double meas = busbw(func, algbw(r.size_bytes, r.oop_time_us * 1e-6), n);
    if (r.oop_algbw >= 1) {
      EXPECT_NEAR(meas, r.oop_busbw * 1e9, 0.01 * r.oop_busbw * 1e9) << file << " " << r.size_bytes;
    }
    b.add(r.size_bytes, std::abs(pred - meas) / meas);
  }
  return b.medians();
}
}  // namespace

// The table of validated cases (sim/collectives/validated.cpp, what --explain and the run report
// quote) says what the datasets give: each entry's medians within 0.1 % (they are quoted to 0.1 %)
// of the medians computed here through the same presets and code.
TEST(NcclDatasets, ValidatedTableIsWhatTheDatasetsGive) {
  for (const ValidatedCase& c : validated_cases()) {
    SCOPED_TRACE(c.table);
    const std::string table = c.table;
    bool found = false;
    Medians m;
    for (const auto& d : datasets())
      if (table == std::string("nccl-tests/") + d.file) {
        m = dataset_medians(d);
        found = true;
      }
    for (const auto& p : published_sets())
      if (table == std::string("published_nccl_tests/") + p.file) {
        m = published_medians(p);
        found = true;
      }
    if (!found && c.func != Func::ALL_REDUCE && table.rfind("nccl-tests/", 0) == 0) {
      m = function_table_medians(table.substr(11), c.func, c.preset, c.forced);
      found = true;
    }
    ASSERT_TRUE(found) << "no dataset behind " << table;

    EXPECT_NEAR(c.median_large, m.large, 0.0015);
    EXPECT_NEAR(c.median_mid, m.mid, 0.0015);  // -1 on both sides where there are no rows
    EXPECT_NEAR(c.median_big, m.big, 0.0015);
    if (c.median_small >= 0) {
      EXPECT_TRUE(m.has_small);
      EXPECT_NEAR(c.median_small, m.small, 0.0015);
    } else {
      EXPECT_FALSE(m.has_small);
    }
  }
  // Closest case: the same preset at the nearest node count, else the same GPU.
  // 3 nodes: |log2 3 - log2 4| = 0.415 < |log2 3 - 1| = 0.585, so 4 nodes (the first 4-node entry).
  const ValidatedCase* h = closest_validated("dgx-h100", "h100-sxm", 3);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->nodes, 4);
  EXPECT_STREQ(h->preset, "dgx-h100");
  // No table for aws-p5: the same GPU's nearest case, and the line says the preset differs.
  const ValidatedCase* p5 = closest_validated("aws-p5", "h100-sxm", 2);
  ASSERT_NE(p5, nullptr);
  EXPECT_EQ(p5->nodes, 2);
  EXPECT_NE(trust_line("aws-p5", "h100-sxm", 2).find("preset dgx-h100, not aws-p5"), std::string::npos);
  // A class match skips forced-algorithm runs: aws-p5 at 32 nodes gets the 4-node default H100
  // table, not the 8-node SHARP CollNetChain one.
  EXPECT_EQ(closest_validated("aws-p5", "h100-sxm", 32)->nodes, 4);
  EXPECT_FALSE(closest_validated("aws-p5", "h100-sxm", 32)->forced);
  EXPECT_EQ(closest_validated("my-cluster", "no-such-gpu", 4), nullptr);
  EXPECT_NE(trust_line("my-cluster", "no-such-gpu", 4).find("no validated"), std::string::npos);
}

// reduce_scatter_perf on one 8 x H100 node with the Ring algorithm (NVIDIA/nccl#1047, the README's
// source): NCCL's ReduceScatter through the dgx-h100 preset, nothing fitted. The size column is
// the whole input (nccl-tests prints max(sendBytes, recvBytes)); busbw = algbw x (n-1)/n.
TEST(NcclDatasets, ReduceScatterH100RingMatchesMeasurements) {
  const auto file = data_file("h100-sxm_1x8_reduce_scatter_ring.txt");
  ASSERT_TRUE(std::filesystem::exists(file)) << "missing tests/data/nccl-tests";
  const NcclTestsLog log = parse_nccl_tests_log_file(file.string());
  ASSERT_EQ(nccl_test_of(log), "reduce_scatter_perf");
  ASSERT_EQ(log.nranks_from_bandwidths(true), 8);
  const auto cat = ddpsim::test_support::source_catalog();
  auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-h100"));
  cluster.nodes = 1;
  const NcclTopology topo = nccl_topology(cluster);
  NcclSettings ring;
  ring.algos = {Algo::RING};
  std::vector<double> err;
  for (const auto& r : log.rows) {
    const auto e = predict_collective(Func::REDUCE_SCATTER, topo, r.size_bytes, ring);
    EXPECT_EQ(e.algo, Algo::RING);
    const double pred = busbw(Func::REDUCE_SCATTER, algbw(r.size_bytes, e.time), 8);
    const double meas = busbw(Func::REDUCE_SCATTER, algbw(r.size_bytes, r.oop_time_us * 1e-6), 8);
    // The file's printed busbw is nccl-tests' own figure from the same definition.
    EXPECT_NEAR(meas, r.oop_busbw * 1e9, 0.01 * r.oop_busbw * 1e9);
    err.push_back(std::abs(pred - meas) / meas);
    if (std::getenv("DDPSIM_VERBOSE"))
      std::printf("  %12.0f B  measured %9.1f us  predicted %9.1f us  %s/%s nc=%d  busbw err %+.3f\n", r.size_bytes,
                  r.oop_time_us, e.time * 1e6, to_string(e.algo).c_str(), to_string(e.proto).c_str(), e.nchannels,
                  (pred - meas) / meas);
  }
  const double m = median(err);
  std::printf("[dataset] %-38s %-15s median |busbw err| >=1MiB %6.3f (%zu rows)\n",
              "h100-sxm_1x8_reduce_scatter_ring.txt", "dgx-h100", m, err.size());
  EXPECT_LE(m, kReduceScatterH100Bound);
}

TEST(NcclDatasets, BroadcastA100MatchesMeasurements) {
  const auto file = data_file("a100-sxm4-40gb_1x8_broadcast.txt");
  ASSERT_TRUE(std::filesystem::exists(file)) << "missing tests/data/nccl-tests";
  const NcclTestsLog log = parse_nccl_tests_log_file(file.string());
  ASSERT_EQ(log.runs.size(), 1u);
  ASSERT_EQ(log.ngpus, 8);
  const auto cat = ddpsim::test_support::source_catalog();
  const auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-a100"));
  NcclTopology topo = nccl_topology(cluster);
  topo.gpus_per_process = 8;  // -g 8: one process drives the 8 GPUs
  std::vector<double> large, small;
  for (const auto& r : log.rows) {
    if (!(r.size_bytes > 0)) continue;
    EXPECT_EQ(r.root, 0);
    const auto e = predict_collective(Func::BROADCAST, topo, r.size_bytes);
    EXPECT_EQ(e.algo, Algo::RING);
    const double pred = busbw(Func::BROADCAST, algbw(r.size_bytes, e.time), 8);
    const double meas = busbw(Func::BROADCAST, algbw(r.size_bytes, r.oop_time_us * 1e-6), 8);
    if (r.oop_algbw >= 1) {
      EXPECT_NEAR(meas, r.oop_busbw * 1e9, 0.01 * r.oop_busbw * 1e9);
    }
    (r.size_bytes >= 1048576 ? large : small).push_back(std::abs(pred - meas) / meas);
  }
  ASSERT_EQ(large.size(), 14u);
  ASSERT_EQ(small.size(), 18u);
  std::printf("[dataset] %-38s %-15s median |busbw err| >=1MiB %6.3f, below %6.3f\n",
              "a100-sxm4-40gb_1x8_broadcast.txt", "dgx-a100", median(large), median(small));
  EXPECT_LE(median(large), kBroadcastA100BoundLarge);
  EXPECT_LE(median(small), kBroadcastA100BoundSmall);
}

// The three other tables of the broadcast table's machine (microsoft/superbenchmark's fixture, 8 x
// A100, -g 8, NCCL version not printed: predicted with the current tuner), each held at its
// achieved medians rounded up (NOTES.md "Broadcast"): regression bounds, nothing fitted. The
// all-gather is the model's weakest here (27 % at >= 1 MiB, too fast at 1-8 MiB by 82-129 %).
TEST(NcclDatasets, SuperbenchA100TablesOfTheOtherCollectives) {
  struct Table {
    const char* file;
    Func func;
    double bound_large, bound_small;
  };
  const Table tables[] = {
      {"a100-sxm4-40gb_1x8_allreduce_superbench.txt", Func::ALL_REDUCE, 0.05, 0.125},
      {"a100-sxm4-40gb_1x8_allgather_superbench.txt", Func::ALL_GATHER, 0.275, 0.135},
      {"a100-sxm4-40gb_1x8_reducescatter_superbench.txt", Func::REDUCE_SCATTER, 0.16, 0.125},
  };
  for (const auto& tb : tables) {
    SCOPED_TRACE(tb.file);
    ASSERT_TRUE(std::filesystem::exists(data_file(tb.file))) << "missing tests/data/nccl-tests";
    const NcclTestsLog log = parse_nccl_tests_log_file(data_file(tb.file).string());
    ASSERT_EQ(log.runs.size(), 1u);
    ASSERT_EQ(log.ngpus, 8);
    size_t large = 0;
    for (const auto& r : log.rows) large += r.size_bytes >= 1048576 ? 1 : 0;
    ASSERT_EQ(large, 14u);
    const Medians m = function_table_medians(tb.file, tb.func, "dgx-a100", false);
    std::printf("[dataset] %-48s %-15s median |busbw err| >=1MiB %6.3f, below %6.3f\n", tb.file, "dgx-a100", m.large,
                m.small);
    EXPECT_LE(m.large, tb.bound_large);
    EXPECT_LE(m.small, tb.bound_small);
  }
}

// 2 x p6-b200 (dstackai/dstack#3961, the six rows of 8-256 B available here): the small-size
// latency of the aws-p6-b200 preset, whose EFA step is p5en's (18 us, AWS's model has no P6 entry).
// A two-node tree of LL all-reduces: NCCL's base latency plus the EFA steps. The same rows with
// NCCL's own InfiniBand hwLat (dgx-b200, 8 x 400G IB) would be predicted about twice as fast.
TEST(NcclDatasets, P6TwoNodeSmallRowsTakeTheBorrowedEfaStep) {
  const auto file = data_file("aws-p6-b200_2x8_efa_small.txt");
  ASSERT_TRUE(std::filesystem::exists(file)) << "missing tests/data/nccl-tests";
  const NcclTestsLog log = parse_nccl_tests_log_file(file.string());
  const auto cat = ddpsim::test_support::source_catalog();
  auto cluster = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "aws-p6-b200"));
  cluster.nodes = 2;
  auto ib = cat.load_cluster(cat.resolve(ddpsim::config::Kind::CLUSTER, "dgx-b200"));
  ib.nodes = 2;
  const NcclTopology topo = nccl_topology(cluster), ib_topo = nccl_topology(ib);
  std::vector<double> err, ib_ratio;
  for (const auto& r : log.rows) {
    const double meas = r.oop_time_us * 1e-6;
    const auto e = predict_collective(Func::ALL_REDUCE, topo, r.size_bytes);
    err.push_back(std::abs(meas / e.time - 1));  // |predicted busbw / measured - 1|
    ib_ratio.push_back(predict_collective(Func::ALL_REDUCE, ib_topo, r.size_bytes).time / meas);
  }
  ASSERT_EQ(err.size(), 6u);
  std::printf("[dataset] %-38s %-15s median |busbw err| below 1 MiB %6.3f (IB hwLat: time x %.2f)\n",
              "aws-p6-b200_2x8_efa_small.txt", "aws-p6-b200", median(err), median(ib_ratio));
  EXPECT_LE(median(err), kP6SmallBound);
  EXPECT_LT(median(ib_ratio), 0.55);  // NCCL's IB latencies would be too fast by about 2x
}
