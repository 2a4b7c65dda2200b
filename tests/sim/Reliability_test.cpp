// Every case of the fuzzing findings (tests/data/reliability/FINDINGS.md) as a regression test: bad input is an exit 2
// with a message that names the file and what is wrong; resource cases are refused in under a second with the limit
// named; outputs are all-or-nothing, written through symlinks, and never replace a device or fifo.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/json_reader.hpp"
#include "sim/cli_support.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;
using testing::CliResult;

const std::string kDir = "tests/data/reliability/";

CliResult run(const std::string& args) { return testing::run_cli(args); }

// "Refused in under a second": each refusal takes ~0.05 s in Release; the bound leaves room for
// a loaded CI machine, and more for the sanitizer build (its preset sets ASAN_OPTIONS).
double refuse_bound_s() { return std::getenv("ASAN_OPTIONS") ? 10.0 : 2.0; }

// Exit 2 and every fragment in the message.
void expect_refused(const std::string& args, std::initializer_list<std::string> fragments) {
  const auto r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  for (const auto& f : fragments)
    EXPECT_NE(r.out.find(f), std::string::npos) << args << "\nwanted: " << f << "\n" << r.out;
}

fs::path temp_dir(const std::string& name) { return testing::temp_dir("rel-" + name); }

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// B1: numbers beyond double range, on --set and inside files, with the file and line:column.
TEST(Reliability, B1NumberOverflowIsAnInputError) {
  expect_refused("run resnet50-2x8-a100-hdr -q --set ddp.bucket_cap_mb=1e999",
                 {"--set ddp.bucket_cap_mb=1e999", "1e999 is not allowed; expected a finite number"});
  expect_refused("run resnet50-2x8-a100-hdr -q --set ddp.bucket_cap_mb=-1E400", {"-1E400 is not allowed"});
  const auto d = temp_dir("b1");
  write(d / "s.json", "{\"model\": \"resnet50\",\n \"cluster\": \"dgx-a100\",\n \"ddp\": {\"bucket_cap_mb\": 1e999}}");
  expect_refused("run " + (d / "s.json").string(), {(d / "s.json").string() + ":3:", "1e999 is not allowed"});
}

// B2, B4: integers in nccl-tests banners beyond int.
TEST(Reliability, B2B4BannerIntegersAreRefusedWithTheLine) {
  expect_refused("calibrate " + kDir + "nccl-log-nthread-stoi.txt --cluster azure-nc12s-v3",
                 {"nccl-log-nthread-stoi.txt:1: cannot parse \"# nThread 1 nGpus 99999999999", "G in [0, 1024]"});
  expect_refused("calibrate " + kDir + "nccl-log-version-overflow.txt --cluster azure-nc12s-v3",
                 {"nccl-log-version-overflow.txt:1:", "NCCL version 999999.0.0", "each part an integer in [0, 99]"});
}

// B3: a shape whose product overflows int64.
TEST(Reliability, B3ShapeProductOverflowIsRefused) {
  expect_refused("show " + kDir + "model-shape-overflow.json",
                 {"model-shape-overflow.json: /params/0/shape/0: 4611686018427387904 is not allowed",
                  "an integer in [0, 1099511627776]"});
  const auto d = temp_dir("b3");
  std::ifstream in(kDir + "model-shape-overflow.json");
  Json m = Json::parse(in);
  m["params"][0]["shape"] = {1048576, 1048576, 1048576};  // each dimension fine, the product is not
  write(d / "m.json", m.dump());
  expect_refused("show " + (d / "m.json").string(), {"/params/0/shape:", "the product overflows"});
}

// B5: samples x world size no longer overflows int (UBSan in the sanitizer build).
TEST(Reliability, B5LargeBatchTimesWorldSizeIsComputedInDouble) {
  const auto r = run("run " + kDir + "scenario-batch8e6-int-overflow.json -q --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  // stdout only: 8e6 samples per GPU do not fit in its memory, which stderr warns about.
  const Json j = Json::parse(r.out.substr(0, r.out.size() - r.err.size()));
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_FALSE(j["fits"].get<bool>());
  const double want = 8e6 * j["world_size"].get<double>() / j["step_time_s"].get<double>();
  EXPECT_NEAR(j["samples_per_s"].get<double>(), want, want * 1e-9);
}

// B6: deep nesting is refused with the depth limit, quickly and without recursion.
TEST(Reliability, B6DeepNestingIsRefused) {
  expect_refused("run " + kDir + "scenario-deep-nesting.json",
                 {"scenario-deep-nesting.json: /model/", "nested deeper than 256 levels is not allowed"});
  expect_refused("show " + kDir + "deep-nesting-array.json", {"deep-nesting-array.json:", "nested deeper than 256"});
  const auto d = temp_dir("b6");
  write(d / "deep.json", std::string(1000000, '['));  // the fuzzer's "deep nest text"
  for (const std::string cmd : {"show ", "buckets ", "validate ", "run "}) {
    const auto t0 = std::chrono::steady_clock::now();
    expect_refused(cmd + (d / "deep.json").string(), {"deep.json", "nested deeper than 256"});
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5 * refuse_bound_s())
        << cmd;
  }
  expect_refused("run -q --set 'ddp.powersgd=" + std::string(300, '[') + "'", {"--set", "nested deeper than 256"});
}

// B7, B8: bandwidths that are infinite after unit scaling, or beyond any hardware.
TEST(Reliability, B7B8QuantitiesBeyondTheirRangeAreRefused) {
  expect_refused("run " + kDir + "scenario-inf-bandwidth.json",
                 {"scenario-inf-bandwidth.json: /cluster/inter_node/link: ",
                  "link-inf-bandwidth.json: /bandwidth: \"1e308TBps\" is not allowed", "at most 1e15Bps"});
  expect_refused("run " + kDir + "scenario-1e30TBps.json -q", {"\"1e30TBps\" is not allowed", "at most 1e15Bps"});
  // The same through a link file of its own: 1e20 Gbps is finite but beyond any hardware.
  const auto d = temp_dir("b7");
  std::ifstream in(kDir + "link-1e30TBps.json");
  Json link = Json::parse(in);
  link["bandwidth"] = "1e20Gbps";
  write(d / "link-1e30TBps.json", link.dump());
  fs::copy_file(kDir + "scenario-1e30TBps.json", d / "s.json");
  expect_refused("run -q " + (d / "s.json").string(),
                 {"link-1e30TBps.json: /bandwidth: \"1e20Gbps\" is not allowed", "at most 1e15Bps"});
}

// Found by cli_fuzz.py (seed 20261202): a size on the command line beyond the byte range reached
// the NCCL model's 64-bit byte count (UBSan float-cast-overflow); it is refused like a quantity.
TEST(Reliability, CollectiveSizesBeyondTheByteRangeAreRefused) {
  for (const char* flag : {"--explain", "-b", "-e"}) {
    const std::string other = std::string(flag) == "--explain" ? " -b 1M -e 64M " : " ";
    for (const char* v : {"9223372036854775808", "1e19", "2e9G"})
      expect_refused(std::string("collective allreduce --cluster dgx-a100") + other + flag + " " + v +
                         (std::string(flag) == "-b" ? " -e 1e20" : ""),
                     {"\"", "is too large; sizes are at most 1e18 bytes"});
  }
  // The largest allowed size still runs.
  const auto r = run("collective allreduce --cluster dgx-a100 --explain 1e18");
  EXPECT_EQ(r.code, 0) << r.out;
}

// B8: the rest of the accepted nonsense.
TEST(Reliability, B8AcceptedNonsenseIsRefused) {
  expect_refused("buckets --model resnet50 --set ddp.bucket_cap_mb=1e13", {"/ddp/bucket_cap_mb:", "<= 1000000000"});
  expect_refused("buckets --model resnet50 --bucket-cap-mb 1e15", {"--bucket-cap-mb: 1e15 is not allowed"});
  const std::string log = "tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt";
  expect_refused("collective allreduce --cluster dgx-a100 -b 1M -e 4M -g 8,1 --tolerance nan --compare " + kDir +
                     "collective-compare-cut.txt",
                 {"--tolerance: nan is not allowed; expected a finite number > 0"});
  expect_refused("collective allreduce --cluster dgx-a100 --tolerance inf", {"--tolerance: inf is not allowed"});
  expect_refused("validate x.json --tolerance nan", {"--tolerance: nan is not allowed"});
  expect_refused("run " + kDir + "scenario-duplicate-keys.json",
                 {"scenario-duplicate-keys.json: /nodes: duplicate key \"nodes\"; each key may appear once"});
  expect_refused("calibrate " + kDir + "calibrate-null-measured.txt --cluster p4d --nodes 2 -g 1 --json -",
                 {"calibrate-null-measured.txt:17:", "(out-of-place time) to be a finite number > 0, got \"1e999\""});
  // The cut log has no rows >= 1 MiB: a tolerance there would check nothing, and null is no median.
  expect_refused("collective allreduce --cluster pcie-4090x8 -b 1M --proto LL --tolerance 0.1 --compare " + kDir +
                     "collective-compare-cut.txt --json -",
                 {"collective-compare-cut.txt: no rows of 1 MiB or more, so --tolerance 0.1 has nothing to check"});
  // CLI11's own range message no longer prints the double maximum in full.
  const auto r = run("collective allreduce --cluster dgx-a100 --min-channels -1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--min-channels: -1 is not allowed; expected an integer from 0 to 64"), std::string::npos)
      << r.out;
  EXPECT_LT(r.out.size(), 300u) << r.out;
}

// B9: a failed later output leaves none of the earlier ones; a folder is not a file.
TEST(Reliability, B9OneBadOutputPathLeavesNoOutput) {
  const auto d = temp_dir("b9");
  expect_refused("run resnet50-2x8-a100-hdr -q --json " + (d / "a.json").string() +
                     " --trace /nonexistent/dir/t.json --csv " + (d / "b.csv").string(),
                 {"/nonexistent/dir/t.json: the folder /nonexistent/dir does not exist"});
  EXPECT_FALSE(fs::exists(d / "a.json"));
  EXPECT_FALSE(fs::exists(d / "b.csv"));
  expect_refused("run resnet50-2x8-a100-hdr -q --json " + (d / "a.json").string() + " --csv " + d.string(),
                 {d.string() + ": exists and is a directory"});
  EXPECT_FALSE(fs::exists(d / "a.json"));
  expect_refused("run -q --json " + (d / "same.json").string() + " --trace " + (d / "same.json").string(),
                 {"named by two outputs"});
  EXPECT_TRUE(fs::is_empty(d)) << "temporary files left behind";
  // The calibrate pair (-o and --json) goes together too.
  expect_refused("calibrate tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt --cluster dgx-a100 -g 8,1 -o " +
                     (d / "c.json").string() + " --json /nonexistent/x.json",
                 {"/nonexistent/x.json: the folder"});
  EXPECT_FALSE(fs::exists(d / "c.json"));
}

TEST(Reliability, B9SymlinkIsWrittenThroughToItsTarget) {
  const auto d = temp_dir("b9-link");
  write(d / "target.json", "old");
  fs::create_symlink("target.json", d / "link.json");
  const auto r = run("run -q --json " + (d / "link.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(d / "link.json"));
  std::ifstream in(d / "target.json");
  EXPECT_NO_THROW(Json::parse(in));
  // A dangling symlink creates its target.
  fs::create_symlink("new.json", d / "dangling.json");
  ASSERT_EQ(run("run -q --json " + (d / "dangling.json").string()).code, 0);
  EXPECT_TRUE(fs::is_symlink(d / "dangling.json"));
  EXPECT_TRUE(fs::is_regular_file(d / "new.json"));
}

TEST(Reliability, B9DeviceAndFifoOutputsAreRefusedNotReplaced) {
  const auto d = temp_dir("b9-dev");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  expect_refused("run -q --json " + (d / "fifo").string(),
                 {"fifo: exists and is not a regular file (a device, fifo or socket)", "it is left as it is"});
  EXPECT_TRUE(fs::is_fifo(d / "fifo"));
  // A device of our own (not /dev/null: on a shared machine an old build may have replaced it).
  if (::mknod((d / "nulldev").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "mknod needs root";
  expect_refused("show resnet50 --json " + (d / "nulldev").string(), {"nulldev: exists and is not a regular file"});
  EXPECT_TRUE(fs::is_character_file(d / "nulldev"));
  // A symlink to a device is followed, then refused the same way.
  fs::create_symlink("nulldev", d / "null-link");
  expect_refused("run -q --json " + (d / "null-link").string(), {"null-link: exists and is not a regular file"});
  EXPECT_TRUE(fs::is_character_file(d / "nulldev"));
}

// B10: non-regular inputs are refused before reading.
TEST(Reliability, B10NonRegularInputsAreRefusedAtOnce) {
  const auto d = temp_dir("b10");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  for (const std::string& in : {std::string("/dev/zero"), (d / "fifo").string(), d.string()}) {
    for (const std::string& cmd :
         {"calibrate " + in + " --cluster dgx-a100", "validate " + in, "import-trace " + in + " --model resnet50",
          "collective allreduce --cluster dgx-a100 --compare " + in}) {
      const auto t0 = std::chrono::steady_clock::now();
      expect_refused(cmd, {in + ": is ", "expected a regular file"});
      EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), refuse_bound_s()) << cmd;
    }
  }
}

// Oversized inputs: a limit with a message and the setting that raises it (a 95 MB model ran for
// minutes before).
TEST(Reliability, OversizedInputIsRefusedWithTheLimit) {
  const auto d = temp_dir("big");
  write(d / "big.json", "{\"description\": \"" + std::string(2000000, 'x') + "\"}");
  const auto r = testing::run_cli("show " + (d / "big.json").string());
  EXPECT_EQ(r.code, 2) << r.out;  // not JSON of a model, but read whole: under the default limit
  const std::string bin = testing::ddpsim_bin();
  testing::CliResult small;
  {
    ::setenv("DDPSIM_MAX_INPUT_BYTES", "1000000", 1);
    small = testing::run_cli("show " + (d / "big.json").string());
    ::unsetenv("DDPSIM_MAX_INPUT_BYTES");
  }
  EXPECT_EQ(small.code, 2) << small.out;
  EXPECT_NE(small.out.find("big.json: larger than the input limit of 1000000 bytes; set DDPSIM_MAX_INPUT_BYTES to "
                           "raise it"),
            std::string::npos)
      << small.out;
}

// B11: wrong types inside a results file: the JSON path and what is allowed.
TEST(Reliability, B11ValidateTypeErrorsNameThePath) {
  expect_refused("validate " + kDir + "validate-type-error-306.json",
                 {"validate-type-error-306.json: /step/cases/3/buckets/0: \"../../../etc/passwd\" is not allowed; "
                  "expected an object"});
  expect_refused("validate " + kDir + "validate-type-error-302.json",
                 {"validate-type-error-302.json: /format: false; expected \"ddpbench-results/1\""});
  // A valid results file with one field of the wrong type at a time.
  const auto d = temp_dir("b11");
  std::ifstream src(kDir + "validate-type-error-306.json");
  Json doc = Json::parse(src);
  doc["step"]["cases"][3]["buckets"] = Json::array({Json{{"end_s", "1.13"}}});
  write(d / "a.json", doc.dump());
  expect_refused("validate " + (d / "a.json").string(),
                 {"/step/cases/3/buckets/0/end_s: \"1.13\" is not allowed; expected a number"});
  doc["step"]["cases"][3].erase("buckets");
  // The measured optimizer step: a backward that ends after the step, or a negative time.
  Json late = doc;
  late["step"]["cases"][3]["compute_only_backward_end_s"] = 0.2;
  write(d / "late.json", late.dump());
  expect_refused("validate " + (d / "late.json").string(),
                 {"late.json: /step/cases/3/compute_only_backward_end_s: 0.2 is not a time after the step start and "
                  "before its end"});
  late["step"]["cases"][3]["compute_only_optimizer_s"] = -0.001;
  write(d / "late.json", late.dump());
  expect_refused("validate " + (d / "late.json").string(), {"/step/cases/3/compute_only_optimizer_s: -0.001"});
  // A timed step that is no time (the median interval and slow-phase check read every one).
  Json steps = doc;
  steps["step"]["cases"][3]["step_times_s"] = {0.2, 0.21, "0.2", 0.19};
  write(d / "steps.json", steps.dump());
  expect_refused("validate " + (d / "steps.json").string(),
                 {"steps.json: /step/cases/3/step_times_s/2: \"0.2\" is not allowed; expected a number in [1e-12, "
                  "1000000.0]"});
  steps["step"]["cases"][3]["step_times_s"] = 0.2;
  steps["step"]["cases"][3]["compute_only_times_s"] = {0.2, -1};
  write(d / "steps.json", steps.dump());
  expect_refused("validate " + (d / "steps.json").string(),
                 {"/step/cases/3/step_times_s: 0.2 is not allowed; expected an array",
                  "/step/cases/3/compute_only_times_s/1: -1 is not allowed"});
  doc["hardware"]["ngpus"] = "8";
  write(d / "b.json", doc.dump());
  expect_refused("validate " + (d / "b.json").string(), {"/hardware/ngpus: \"8\" is not allowed; expected an integer"});
}

// Resource limits: refused in under a second with the limit and the setting that raises it.
TEST(Reliability, ResourceLimitsAreCheckedBeforeTheWork) {
  struct Case {
    std::string args;
    std::string limit;
  };
  const std::vector<Case> cases{
      {"--set nodes=1000000", "limits.max_gpus"},
      {"--set nodes=1048576 --set simulation.backend=analytic", "--set limits.max_gpus=8388608"},
      {"--set nodes=1000 --set stragglers.jitter_cv=0.1", "--set limits.max_seconds="},
      // Every flow: 524,288 GPUs with reused rounds, 32,768 without (limits.cpp's estimates: about
      // 22 s and 16 s against the default 10 s).
      {"--set nodes=65536 --set simulation.ranks=all", "--set limits.max_seconds="},
      {"--set nodes=4096 --set simulation.ranks=all --set streams.comm_streams=2", "--set limits.max_seconds="},
      {"--set nodes=4096 --set simulation.ranks=all --set simulation.reuse_rounds=false", "--set limits.max_seconds="},
      {"--set limits.max_tensors=100", "161 parameter tensors, more than limits.max_tensors 100"},
  };
  for (const auto& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    expect_refused("run resnet50-2x8-a100-hdr -q " + c.args, {c.limit, "raise it with"});
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), refuse_bound_s()) << c.args;
  }
  // Raising a limit is honoured.
  EXPECT_EQ(run("run resnet50-2x8-a100-hdr -q --set limits.max_gpus=16").code, 0);
  expect_refused("run resnet50-2x8-a100-hdr -q --set limits.max_gpus=15",
                 {"/nodes: 16 GPUs (2 nodes x 8) is more than limits.max_gpus 15"});
}

}  // namespace
}  // namespace ddpsim
