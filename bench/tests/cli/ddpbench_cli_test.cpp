// The ddpbench command line as a user meets it, without a GPU: help, usage errors (exit 2, the
// message naming the flag and value), and model files checked before any GPU is touched.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs ddpbench with `args` (shell words); stdout and stderr are kept apart.
Result run(const std::string& args) {
  const std::string err_file =
      (std::filesystem::temp_directory_path() / ("ddpbench-cli-" + std::to_string(::getpid()) + ".err")).string();
  Result r;
  const std::string cmd = std::string(DDPBENCH_BIN_PATH) + " " + args + " 2>" + err_file;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_file);
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DdpbenchCli, HelpListsCommandsAndExitsZero) {
  for (const char* args : {"", "--help", "help"}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 0) << args << r.err;
    for (const char* cmd : {"allreduce", "layers", "contention", "step"}) EXPECT_TRUE(has(r.out, cmd)) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST(DdpbenchCli, SubcommandHelpListsItsFlagsWithDefaults) {
  const auto r = run("allreduce --help");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* flag :
       {"-b,--minbytes", "-e,--maxbytes", "-f,--stepfactor", "-c,--check", "-n,--iters", "-w,--warmup", "--json", "8G"})
    EXPECT_TRUE(has(r.out, flag)) << flag << "\n" << r.out;
  const auto s = run("step -h");
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_TRUE(has(s.out, "--caps")) << s.out;
  EXPECT_TRUE(has(s.out, "--first-bucket-mb")) << s.out;
}

TEST(DdpbenchCli, UsageErrorsExitTwoNamingTheFlag) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c :
       {Case{"allreduce -n 0", "ddpbench: --iters: '0' is not an integer >= 1"},
        Case{"allreduce -e 12Q", "ddpbench: --maxbytes: '12Q' is not a size in bytes"},
        Case{"allreduce -b 1G -e 8", "ddpbench: -b: 1073741824 bytes is larger than -e 8"},
        Case{"layers --model m.json --dtype fp8", "ddpbench: --dtype: fp8 not in {"},
        Case{"layers", "ddpbench: --model/--synthetic: exactly one is required"},
        Case{"contention --bogus 1", "--bogus"},
        Case{"bench", "ddpbench: unknown command 'bench' (allowed: allreduce, layers, contention, step)"},
        Case{"layers --synthetic cnn:1", "ddpbench: --synthetic: 'cnn:1' is not mlp:LAYERS:HIDDEN with LAYERS >= 1"}}) {
    const auto r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, c.message)) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  // The hint names the subcommand whose --help lists the flags.
  EXPECT_TRUE(has(run("step --caps 0 --synthetic mlp:1:8").err, "(see ddpbench step --help)"));
}

TEST(DdpbenchCli, ModelFilesAreCheckedByTheSimulatorsParserBeforeAnyGpuWork) {
  const auto missing = run("layers --model no/such/model.json");
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_TRUE(has(missing.err, "ddpbench: no/such/model.json: cannot open file")) << missing.err;

  const auto dir = std::filesystem::temp_directory_path() / ("ddpbench-cli-model-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"format": "ddpsim-model/1", "name": "bad", "batch_size": 0, "params": [],
                            "layers": [], "grad_ready_order": []})";
  const auto r = run("step --model " + bad);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, bad + ": /batch_size: 0")) << r.err;
  EXPECT_TRUE(has(r.err, bad + ": /params:")) << r.err;
  EXPECT_TRUE(has(r.err, bad + ": /layers:")) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
