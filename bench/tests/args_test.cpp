// Command-line parsing: good commands, and bad ones whose messages name the flag and what is allowed.
#include "args.hpp"

#include <gtest/gtest.h>

#include "errors.hpp"

using namespace ddpbench;

namespace {
std::string error_of(const std::vector<std::string>& a) {
  try {
    (void)parse_command(a);
  } catch (const ArgError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Args, AllreduceDefaultsAndSizes) {
  auto c = parse_command({"allreduce", "-g", "4", "-b", "8", "-e", "128M", "-f", "2", "-n", "10", "-w", "2"});
  const auto& a = std::get<AllreduceArgs>(c);
  EXPECT_EQ(a.ngpus, 4);
  EXPECT_EQ(a.min_bytes, 8u);
  EXPECT_EQ(a.max_bytes, 128u << 20);
  EXPECT_DOUBLE_EQ(a.step_factor, 2.0);
  EXPECT_EQ(a.timing.iters, 10);
  EXPECT_EQ(a.timing.warmup, 2);
  EXPECT_EQ(parse_size("-e", "8G"), 8ULL << 30);
  EXPECT_EQ(parse_size("-e", "64k"), 64u << 10);
  EXPECT_EQ(parse_size("-e", "1.5K"), 1536u);  // the simulator's reading of nccl-tests sizes
}

TEST(Args, SizeThatIsNotWholeBytesIsRefused) {
  for (const char* bad : {"0.5", "0", "1.0000001K"}) {
    try {
      parse_size("-b", bad);
      ADD_FAILURE() << bad;
    } catch (const ArgError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("-b: '") + bad + "' is not a size in bytes like 8, 64K, 1M, 8G (K/M/G = 1024-based)");
    }
  }
}

TEST(Args, StepCapsAndDefaults) {
  auto c = parse_command({"step", "--model", "models/resnet50.json", "--caps", "default,1,2.5", "--json=out.json"});
  const auto& s = std::get<StepArgs>(c);
  ASSERT_EQ(s.caps.size(), 3u);
  EXPECT_TRUE(s.caps[0].is_default);
  EXPECT_DOUBLE_EQ(s.caps[2].mb, 2.5);
  EXPECT_EQ(s.timing.json_path, "out.json");
  auto d = std::get<StepArgs>(parse_command({"step", "--synthetic", "mlp:2:64"}));
  EXPECT_EQ(d.caps, (std::vector<CapSpec>{{1, false}, {5, false}, {25, false}, {100, false}}));
}

TEST(Args, BadDtypeNamesFlagAndAllowedValues) {
  EXPECT_EQ(error_of({"layers", "--model", "m.json", "--dtype", "fp8"}),
            "--dtype: 'fp8' is not one of float32, float16, bfloat16");
}

TEST(Args, BadChoiceNamesAllowedValues) {
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--optimizer", "adam"}),
            "--optimizer: 'adam' is not one of none, sgd");
  EXPECT_EQ(error_of({"layers", "--model", "m.json", "--conv", "fft"}),
            "--conv: 'fft' is not one of auto, cudnn, gemm");
}

TEST(Args, BadNumbersNameTheFlag) {
  EXPECT_EQ(error_of({"allreduce", "-n", "0"}), "-n: '0' is not an integer >= 1");
  EXPECT_EQ(error_of({"allreduce", "-g", "two"}), "-g: 'two' is not an integer >= 0");
  EXPECT_EQ(error_of({"allreduce", "-f", "1"}), "-f: '1' is not a number > 1");
  EXPECT_EQ(error_of({"allreduce", "-c", "yes"}), "-c: 'yes' is not one of 0, 1");
  EXPECT_NE(error_of({"allreduce", "-e", "12Q"}).find("-e: '12Q' is not a size in bytes like 8, 64K, 1M, 8G"),
            std::string::npos);
  EXPECT_EQ(error_of({"allreduce", "-b", "1G", "-e", "8"}), "-b: 1073741824 bytes is larger than -e 8");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--caps", "1,x"}),
            "--caps: 'x' in '1,x' is not a number > 0 or 'default'");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--caps", "0"}),
            "--caps: '0' in '0' is not a number > 0 or 'default'");
}

TEST(Args, MissingValueSaysWhatWasExpected) {
  EXPECT_EQ(error_of({"layers", "--model"}), "--model: missing value (expected a ddpsim-model/1 JSON file)");
}

TEST(Args, UnknownFlagListsAllowedFlags) {
  const std::string e = error_of({"contention", "--bogus", "1"});
  EXPECT_NE(e.find("ddpbench contention: unknown flag '--bogus'"), std::string::npos) << e;
  EXPECT_NE(e.find("--hog-blocks"), std::string::npos) << e;
  EXPECT_NE(e.find("-g/--ngpus"), std::string::npos) << e;
}

TEST(Args, UnknownCommandListsCommands) {
  EXPECT_EQ(error_of({"bench"}), "unknown command 'bench' (allowed: allreduce, layers, contention, step)");
}

TEST(Args, ModelSourceIsRequiredExactlyOnce) {
  const std::string want =
      "--model/--synthetic: exactly one is required (--model FILE.json or --synthetic mlp:LAYERS:HIDDEN)";
  EXPECT_EQ(error_of({"layers"}), want);
  EXPECT_EQ(error_of({"step", "--model", "a.json", "--synthetic", "mlp:1:8"}), want);
}

TEST(Args, HelpIsNotAnError) {
  EXPECT_TRUE(std::holds_alternative<HelpRequest>(parse_command({})));
  auto h = parse_command({"step", "--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequest>(h));
  EXPECT_NE(std::get<HelpRequest>(h).text.find("--caps"), std::string::npos);
}

TEST(Args, ConfigJsonHasEveryFlag) {
  auto j = config_json(parse_command({"contention", "-g", "2", "--dtype", "bfloat16", "--bytes", "64M"}));
  EXPECT_EQ(j["command"], "contention");
  EXPECT_EQ(j["ngpus"], 2);
  EXPECT_EQ(j["dtype"], "bfloat16");
  EXPECT_EQ(j["bytes"], 64u << 20);
  EXPECT_EQ(j["hog_blocks"], 16);
  EXPECT_EQ(j["iters"], 20);
  EXPECT_EQ(j["warmup"], 5);
}
