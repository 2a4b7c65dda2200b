// Command-line parsing (CLI11): good commands with their defaults, and bad ones whose messages name
// the flag, quote the value and say what is allowed.
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

TEST(Args, AllreduceFlagsAndSizes) {
  auto c =
      parse_command({"allreduce", "-g", "4", "-b", "8", "-e", "128M", "-f", "2.5", "-n", "10", "-w", "2", "-c", "0"});
  const auto& a = std::get<AllreduceArgs>(c);
  EXPECT_EQ(a.ngpus, 4);
  EXPECT_EQ(a.min_bytes, 8u);
  EXPECT_EQ(a.max_bytes, 128u << 20);
  EXPECT_DOUBLE_EQ(a.step_factor, 2.5);
  EXPECT_FALSE(a.check);
  EXPECT_EQ(a.timing.iters, 10);
  EXPECT_EQ(a.timing.warmup, 2);
  // Long names and --flag=value spell the same options.
  const auto l = std::get<AllreduceArgs>(parse_command({"allreduce", "--minbytes=1.5K", "--maxbytes", "8G"}));
  EXPECT_EQ(l.min_bytes, 1536u);  // the simulator's reading of nccl-tests sizes
  EXPECT_EQ(l.max_bytes, 8ULL << 30);
  EXPECT_EQ(parse_size("-e", "8G"), 8ULL << 30);
  EXPECT_EQ(parse_size("-e", "64k"), 64u << 10);
}

TEST(Args, Defaults) {
  const auto a = std::get<AllreduceArgs>(parse_command({"allreduce"}));
  EXPECT_EQ(a.ngpus, 0);
  EXPECT_EQ(a.min_bytes, 8u);
  EXPECT_EQ(a.max_bytes, 8ULL << 30);
  EXPECT_DOUBLE_EQ(a.step_factor, 2.0);
  EXPECT_TRUE(a.check);
  EXPECT_EQ(a.timing.iters, 20);
  EXPECT_EQ(a.timing.warmup, 5);
  EXPECT_EQ(a.timing.json_path, "");
  const auto l = std::get<LayersArgs>(parse_command({"layers", "--model", "m.json"}));
  EXPECT_EQ(l.model.model_path, "m.json");
  EXPECT_EQ(l.model.batch, 0);
  EXPECT_EQ(l.model.dtype, DType::FLOAT32);
  EXPECT_EQ(l.model.conv, "auto");
  EXPECT_FALSE(l.model.tf32);
  EXPECT_EQ(l.model.seq_len, 0);
  EXPECT_EQ(l.model.head_dim, 64);
  EXPECT_EQ(l.device, 0);
  const auto k = std::get<ContentionArgs>(parse_command({"contention"}));
  EXPECT_EQ(k.dtype, DType::FLOAT16);
  EXPECT_EQ(k.bytes, 256u << 20);
  EXPECT_EQ(k.hog_blocks, 16);
  const auto s = std::get<StepArgs>(parse_command({"step", "--synthetic", "mlp:2:64"}));
  EXPECT_EQ(s.caps, (std::vector<CapSpec>{{1, false}, {5, false}, {25, false}, {100, false}}));
  EXPECT_DOUBLE_EQ(s.first_bucket_mb, -1);
  EXPECT_FALSE(s.bucket_view);
  EXPECT_EQ(s.optimizer, "none");
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
  EXPECT_EQ(error_of({"allreduce", "-b", "0.5"}),
            "--minbytes: '0.5' is not a size in bytes like 8, 64K, 1M, 8G (K/M/G = 1024-based)");
}

TEST(Args, StepCapsFlagsAndJson) {
  auto c = parse_command({"step",
                          "--model",
                          "models/resnet50.json",
                          "--caps",
                          "default,1,2.5",
                          "--json=out.json",
                          "--first-bucket-mb",
                          "1",
                          "--bucket-view",
                          "--optimizer",
                          "sgd",
                          "--tf32",
                          "--dtype",
                          "bfloat16",
                          "--batch",
                          "16",
                          "--seq-len",
                          "512",
                          "--head-dim",
                          "128",
                          "--conv",
                          "gemm"});
  const auto& s = std::get<StepArgs>(c);
  ASSERT_EQ(s.caps.size(), 3u);
  EXPECT_TRUE(s.caps[0].is_default);
  EXPECT_DOUBLE_EQ(s.caps[0].mb, 25.0);
  EXPECT_DOUBLE_EQ(s.caps[1].mb, 1.0);
  EXPECT_DOUBLE_EQ(s.caps[2].mb, 2.5);
  EXPECT_EQ(s.timing.json_path, "out.json");
  EXPECT_DOUBLE_EQ(s.first_bucket_mb, 1.0);
  EXPECT_TRUE(s.bucket_view);
  EXPECT_EQ(s.optimizer, "sgd");
  EXPECT_TRUE(s.model.tf32);
  EXPECT_EQ(s.model.dtype, DType::BFLOAT16);
  EXPECT_EQ(s.model.batch, 16);
  EXPECT_EQ(s.model.seq_len, 512);
  EXPECT_EQ(s.model.head_dim, 128);
  EXPECT_EQ(s.model.conv, "gemm");
}

TEST(Args, BadDtypeNamesFlagValueAndAllowedValues) {
  const std::string e = error_of({"layers", "--model", "m.json", "--dtype", "fp8"});
  EXPECT_NE(e.find("--dtype: fp8 not in {"), std::string::npos) << e;
  EXPECT_NE(e.find("float32,float16,bfloat16"), std::string::npos) << e;
}

TEST(Args, BadChoiceNamesAllowedValues) {
  const std::string opt = error_of({"step", "--model", "m.json", "--optimizer", "adam"});
  EXPECT_NE(opt.find("--optimizer: adam not in {"), std::string::npos) << opt;
  EXPECT_NE(opt.find("none"), std::string::npos) << opt;
  EXPECT_NE(opt.find("sgd"), std::string::npos) << opt;
  const std::string conv = error_of({"layers", "--model", "m.json", "--conv", "fft"});
  EXPECT_NE(conv.find("--conv: fft not in {"), std::string::npos) << conv;
  EXPECT_NE(conv.find("cudnn"), std::string::npos) << conv;
  const std::string check = error_of({"allreduce", "-c", "yes"});
  EXPECT_NE(check.find("--check: yes not in {"), std::string::npos) << check;
}

TEST(Args, BadNumbersNameTheFlag) {
  EXPECT_EQ(error_of({"allreduce", "-n", "0"}), "--iters: '0' is not an integer >= 1");
  EXPECT_EQ(error_of({"allreduce", "-n", "1.5"}), "--iters: '1.5' is not an integer >= 1");
  EXPECT_EQ(error_of({"allreduce", "-w", "-1"}), "--warmup: '-1' is not an integer >= 0");
  EXPECT_EQ(error_of({"allreduce", "-g", "two"}), "--ngpus: 'two' is not an integer >= 0");
  EXPECT_EQ(error_of({"allreduce", "-g", "99999999999"}), "--ngpus: '99999999999' is too large (at most 2147483647)");
  EXPECT_EQ(error_of({"allreduce", "-f", "1"}), "--stepfactor: '1' is not a number > 1");
  EXPECT_EQ(error_of({"contention", "--hog-blocks", "0"}), "--hog-blocks: '0' is not an integer >= 1");
  EXPECT_EQ(error_of({"layers", "--model", "m.json", "-d", "x"}), "--device: 'x' is not an integer >= 0");
  EXPECT_EQ(error_of({"layers", "--model", "m.json", "--batch", "0"}), "--batch: '0' is not an integer >= 1");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--first-bucket-mb", "0"}),
            "--first-bucket-mb: '0' is not a number > 0");
  EXPECT_EQ(error_of({"allreduce", "-e", "12Q"}),
            "--maxbytes: '12Q' is not a size in bytes like 8, 64K, 1M, 8G (K/M/G = 1024-based)");
  EXPECT_EQ(error_of({"allreduce", "-b", "1G", "-e", "8"}), "-b: 1073741824 bytes is larger than -e 8");
  EXPECT_EQ(error_of({"contention", "--bytes", "512"}), "--bytes: 512 is below the minimum 1K");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--caps", "1,x"}),
            "--caps: 'x' in '1,x' is not a number > 0 or 'default'");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--caps", "0"}),
            "--caps: '0' in '0' is not a number > 0 or 'default'");
  EXPECT_EQ(error_of({"step", "--model", "m.json", "--caps", "1,,5"}),
            "--caps: '' in '1,,5' is not a number > 0 or 'default'");
}

TEST(Args, MissingAndEmptyValuesNameTheFlag) {
  const std::string missing = error_of({"layers", "--model"});
  EXPECT_NE(missing.find("--model"), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing"), std::string::npos) << missing;
  EXPECT_EQ(error_of({"layers", "--model", ""}), "--model: empty value (expected a ddpsim-model/1 JSON file)");
  EXPECT_EQ(error_of({"allreduce", "--json", ""}), "--json: empty value (expected a file path)");
}

TEST(Args, UnknownFlagIsNamed) {
  const std::string e = error_of({"contention", "--bogus", "1"});
  EXPECT_NE(e.find("not expected"), std::string::npos) << e;
  EXPECT_NE(e.find("--bogus"), std::string::npos) << e;
  // A flag of another subcommand is unknown here.
  EXPECT_NE(error_of({"allreduce", "--caps", "1"}).find("--caps"), std::string::npos);
}

TEST(Args, UnknownCommandListsCommands) {
  EXPECT_EQ(error_of({"bench"}), "unknown command 'bench' (allowed: allreduce, layers, contention, step)");
  EXPECT_EQ(error_of({"allreduce", "step"}), "The following argument was not expected: step");
}

TEST(Args, ModelSourceIsRequiredExactlyOnce) {
  const std::string want =
      "--model/--synthetic: exactly one is required (--model FILE.json or --synthetic mlp:LAYERS:HIDDEN)";
  EXPECT_EQ(error_of({"layers"}), want);
  EXPECT_EQ(error_of({"step", "--model", "a.json", "--synthetic", "mlp:1:8"}), want);
}

TEST(Args, HelpIsNotAnError) {
  for (const auto& args : std::vector<std::vector<std::string>>{{}, {"help"}, {"--help"}, {"-h"}}) {
    const auto h = parse_command(args);
    ASSERT_TRUE(std::holds_alternative<HelpRequest>(h)) << args.size();
    const std::string& text = std::get<HelpRequest>(h).text;
    for (const char* cmd : {"allreduce", "layers", "contention", "step"})
      EXPECT_NE(text.find(cmd), std::string::npos) << cmd << "\n" << text;
  }
  auto h = parse_command({"step", "--help"});
  ASSERT_TRUE(std::holds_alternative<HelpRequest>(h));
  const std::string& text = std::get<HelpRequest>(h).text;
  EXPECT_NE(text.find("--caps"), std::string::npos) << text;
  EXPECT_NE(text.find("1,5,25,100"), std::string::npos) << text;    // defaults are shown
  EXPECT_EQ(text.find("--hog-blocks"), std::string::npos) << text;  // another subcommand's flag
  // Help wins over the checks across flags (no --model here).
  EXPECT_TRUE(std::holds_alternative<HelpRequest>(parse_command({"layers", "-h"})));
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
  auto s = config_json(parse_command({"step", "--synthetic", "mlp:1:8", "--caps", "default,5"}));
  EXPECT_EQ(s["command"], "step");
  EXPECT_EQ(s["caps"], nlohmann::json::parse(R"(["default", 5.0])"));
  EXPECT_EQ(s["first_bucket_mb"], "auto");
  EXPECT_EQ(s["synthetic"], "mlp:1:8");
}
