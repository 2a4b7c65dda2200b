// The nccl-tests log parser's hand-written line matchers (collectives::log_match) against the
// ECMAScript patterns they implement, evaluated by std::regex: on every line of the bundled and
// shared nccl-tests logs, on hand-made edge cases, and on seeded mutations of all of them
// (characters the patterns care about inserted, deleted or replaced), each matcher must give the
// regex's answer: whether it matches and what its groups hold.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/nccl_tests_log.hpp"

namespace lm = ddpsim::collectives::log_match;

namespace {

std::vector<std::string> corpus() {
  std::set<std::string> lines = {
      "[1,0]<stdout>:#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] NVIDIA A100-SXM4-80GB",
      "[12,3]<stderr>:x",
      "[1,0]<stdin>:x",
      "[,0]<stdout>:",
      "[1,0]<stdout>",
      "host:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2",
      "NCCL INFOx",
      "xNCCL INFO",
      "NCCL TRACE",
      "NCCL WARN_",
      "NCCL  INFO",
      "a NCCL WARN b NCCL version 2.8.3",
      "# NCCL version 2.8.03 ",
      "NCCL version2.8.3",
      "NCCL version \t2.x.3 NCCL version 2.19.3",
      "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102",
      "nccl-library=1234567 nccl-library=2803",
      "nccl-library=2803_",
      "nccl-library=280",
      "nccl-library=280.",
      "# Collective test starting: all_reduce_perf",
      "# Collective test starting:",
      "# Collective test starting:   \t",
      "# Collective test starting:a Collective test starting: b",
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20",
      "# nThread 1 nGpus x nThread 2 nGpus 4",
      "# nThread1 nGpus 8",
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0",
      "validation: 1 graph:10 cudagraph: 3",
      "cudagraph: 3 graph:\t7",
      "graph: x graph: 2",
      "graph:",
      "_graph: 1",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] NVIDIA A100-SXM4-80GB   ",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07]",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] ",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07 NVIDIA",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [] [x] y",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] A\rB",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] A B \r",
      "#  Rank  0 Group  0 Pid  1234 on host-1 device  0 [0x07] \n A",
      "#Rank 0 Group 0 Pid 1 on h device 0 [0] x",
      "#   Rank 15 Pid  23920 on    server2 device  7 [0xe7] Tesla V100-SXM2-16GB",
      "#   Rank 15 Group Pid  23920 on    server2 device  7 [0xe7] Tesla V100-SXM2-16GB",
      "#   Rank 15 Group 3Pid  23920 on    server2 device  7 [0xe7] Tesla V100-SXM2-16GB",
      "#   Rank 15 GroupPid 1 on s device 7 [0xe7] T",
      "0: # nThread 1 nGpus 1 minBytes 8",
      "  12: 8 2 float sum -1 20.26 0.00 0.00 0 17.74 0.00 0.00 0",
      "12:8 2 float",
      "x0: 8",
      " : 8",
      "10:1234:1234 [0] NCCL INFO Bootstrap",
      "[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0[0]    2302.3",
      "[12] # nThread 1 nGpus 1",
      "[] 8 2",
      "[1a] 8",
      "[0",
      "ip-10-0-0-1:1234:1234 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.9.1-aws",
      "NET/OFI Initializing aws-ofi-nccl 1.7.4-aws aws-ofi-nccl 1.10.0",
      "aws-ofi-nccl1.7.4 aws-ofi-nccl  \t2.0.1",
      "aws-ofi-nccl 1.x.4",
      "aws-ofi-nccl v1.7.4",
      "# Avg bus bandwidth    : 123.45 ",
      "#Avg bus bandwidth:1",
      "# Avg bus bandwidth : ",
      "# Avg bus bandwidth",
      "",
  };
  std::vector<std::filesystem::path> files;
  // tests/data holds the public nccl-tests logs (tests/data/nccl-tests) and the fuzzing cases.
  if (!std::filesystem::is_directory("tests/data")) ADD_FAILURE() << "tests/data not found (run from the source tree)";
  for (const auto& dir : {std::filesystem::path("tests/data")})
    if (std::filesystem::is_directory(dir))
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path());
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) lines.insert(line);
  }
  return {lines.begin(), lines.end()};
}

// Mutations that reach the patterns' edges: the characters they test for.
std::vector<std::string> mutated(const std::vector<std::string>& base, int per_line, unsigned seed) {
  const std::string alphabet = "0123456789 \t\r\v#[],<>:._-xNIFOWARTCEbn]";
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (const auto& line : base)
    for (int k = 0; k < per_line; ++k) {
      std::string s = line;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        const size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0: s.insert(pos, 1, c); break;
          case 1:
            if (pos < s.size()) s.erase(pos, 1);
            break;
          default:
            if (pos < s.size()) s[pos] = c;
        }
      }
      out.push_back(s);
    }
  return out;
}

template <size_t N>
std::optional<std::array<std::string, N>> groups(const std::regex& re, const std::string& s) {
  std::smatch m;
  if (!std::regex_search(s, m, re)) return std::nullopt;
  std::array<std::string, N> g;
  for (size_t i = 0; i < N; ++i) g[i] = m[i + 1];
  return g;
}

std::optional<std::string> group1(const std::regex& re, const std::string& s) {
  auto g = groups<1>(re, s);
  if (!g) return std::nullopt;
  return (*g)[0];
}

void check_all(const std::vector<std::string>& lines, int& checked) {
  static const std::regex kMpiPrefix(R"(^\[\d+,\d+\]<(stdout|stderr)>:)");
  static const std::regex kDebug(R"(\bNCCL (INFO|WARN|TRACE)\b)");
  static const std::regex kVersion(R"(NCCL version\s+(\d+)\.(\d+)\.(\d+))");
  static const std::regex kLibraryCode(R"(nccl-library=(\d{4,6})\b)");
  static const std::regex kTestName(R"(Collective test starting:\s*(\S+))");
  static const std::regex kThreads(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex kGraph(R"(\bgraph:\s*(\d+))");
  static const std::regex kDevice(
      R"(^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*?)\s*$)");
  static const std::regex kSrun(R"(^ *\d+: )");
  static const std::regex kOfi(R"(aws-ofi-nccl\s+(\d+)\.(\d+)\.(\d+))");
  static const std::regex kBracket(R"(^(\[\d+\]))");
  static const std::regex kAvg(R"(^#\s*Avg bus bandwidth\s*:\s*(\S+))");
  for (const auto& s : lines) {
    std::smatch m;
    const size_t want_prefix = std::regex_search(s, m, kMpiPrefix) ? static_cast<size_t>(m.length(0)) : 0;
    EXPECT_EQ(lm::mpi_prefix(s), want_prefix) << "mpi prefix: \"" << s << "\"";
    const size_t want_srun = std::regex_search(s, m, kSrun) ? static_cast<size_t>(m.length(0)) : 0;
    EXPECT_EQ(lm::srun_label(s), want_srun) << "srun label: \"" << s << "\"";
    EXPECT_EQ(lm::bracket_rank(s), group1(kBracket, s)) << "bracket rank: \"" << s << "\"";
    EXPECT_EQ(lm::ofi_version(s), groups<3>(kOfi, s)) << "ofi version: \"" << s << "\"";
    EXPECT_EQ(lm::debug_tag(s), std::regex_search(s, kDebug)) << "debug tag: \"" << s << "\"";
    EXPECT_EQ(lm::version(s), groups<3>(kVersion, s)) << "version: \"" << s << "\"";
    EXPECT_EQ(lm::library_code(s), group1(kLibraryCode, s)) << "library code: \"" << s << "\"";
    EXPECT_EQ(lm::test_name(s), group1(kTestName, s)) << "test name: \"" << s << "\"";
    EXPECT_EQ(lm::threads(s), groups<2>(kThreads, s)) << "threads: \"" << s << "\"";
    EXPECT_EQ(lm::cuda_graph(s), group1(kGraph, s)) << "graph: \"" << s << "\"";
    EXPECT_EQ(lm::device(s), groups<2>(kDevice, s)) << "device: \"" << s << "\"";
    EXPECT_EQ(lm::avg_bus_bandwidth(s), group1(kAvg, s)) << "avg: \"" << s << "\"";
    ++checked;
  }
}

TEST(NcclLogMatch, EqualsTheRegexOnRealAndEdgeLines) {
  const auto lines = corpus();
  ASSERT_GE(lines.size(), 40u);
  int checked = 0;
  check_all(lines, checked);
  EXPECT_EQ(checked, static_cast<int>(lines.size()));
}

TEST(NcclLogMatch, EqualsTheRegexOnMutatedLines) {
  // Banner and debug lines carry the patterns; data rows are many and alike: a sample of them.
  std::vector<std::string> base;
  int rows = 0;
  for (const auto& l : corpus())
    if (l.find('#') != std::string::npos || l.find("NCCL") != std::string::npos || l.find('[') != std::string::npos ||
        rows++ % 25 == 0)
      base.push_back(l);
  int checked = 0;
  check_all(mutated(base, 12, 20261201), checked);
  EXPECT_GE(checked, 12 * 40);
}

}  // namespace
