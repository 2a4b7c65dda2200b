// Every bundled scenario, and variants that walk the engine's other paths, give the reports in
// tests/golden/reports (made by tests/golden/make_golden.sh): every number equal to 1e-9 relative,
// every string equal (1e-12 absolute for values that cancel to ~0). They were first made with the pre-rewrite engine
// (commit fa8208c), which the engine rewrite reproduced to 1e-9; they are regenerated only for deliberate
// model changes, each named in its commit (tests/golden/README.md lists them). Keys the golden file does not have
// (fields added since) are not compared; `flows` is the engine's own cost (representative flow classes change it), not
// a result.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim {
namespace {

using core::Json;

struct Case {
  std::string name, args;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::ifstream in("tests/golden/cases.txt");
  std::vector<Case> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    out.push_back({line.substr(0, sp), sp == std::string::npos ? "" : line.substr(sp + 1)});
  }
  return out;
}

std::string run_json(const std::string& args, int& code) {
  const std::string cmd = std::string(DDPSIM_BIN_PATH) + " run " + args + " --json - 2>/dev/null";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

void compare(const Json& want, const Json& got, const std::string& path, std::vector<std::string>& diffs) {
  if (want.is_object()) {
    if (!got.is_object()) {
      diffs.push_back(path + ": not an object");
      return;
    }
    for (const auto& [k, v] : want.items()) {
      if (k == "flows") continue;
      if (!got.contains(k)) {
        diffs.push_back(path + "/" + k + ": missing");
        continue;
      }
      compare(v, got[k], path + "/" + k, diffs);
    }
  } else if (want.is_array()) {
    if (!got.is_array() || got.size() != want.size()) {
      diffs.push_back(path + ": array of " + std::to_string(want.size()) + " expected, got " + got.dump());
      return;
    }
    for (size_t i = 0; i < want.size(); ++i) compare(want[i], got[i], path + "/" + std::to_string(i), diffs);
  } else if (want.is_number()) {
    if (!got.is_number()) {
      diffs.push_back(path + ": not a number");
      return;
    }
    const double a = want.get<double>(), b = got.get<double>();
    // 1e-9 relative, and 1e-12 absolute (seconds, or a ratio): quantities that are ~0 by
    // cancellation (iteration 1's overlap, contention when nothing overlapped) keep only the
    // rounding of sums the engine may take in another order.
    if (std::abs(a - b) > 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-12)
      diffs.push_back(path + ": " + want.dump() + " expected, got " + got.dump());
  } else if (want != got) {
    diffs.push_back(path + ": " + want.dump() + " expected, got " + got.dump());
  }
}

TEST(Golden, CaseListCoversEveryBundledScenario) {
  std::vector<std::string> names;
  for (const auto& c : cases()) names.push_back(c.args.substr(0, c.args.find(' ')));
  ASSERT_GE(cases().size(), 6u);
  for (const auto& e : std::filesystem::directory_iterator("scenarios")) {
    if (e.path().extension() != ".json") continue;
    EXPECT_NE(std::find(names.begin(), names.end(), e.path().stem().string()), names.end())
        << e.path() << " has no golden case in tests/golden/cases.txt";
  }
}

class GoldenReport : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenReport, EqualsTheRecordedReport) {
  const Case& c = GetParam();
  std::ifstream in("tests/golden/reports/" + c.name + ".json");
  ASSERT_TRUE(in) << "no golden report for " << c.name;
  std::stringstream ss;
  ss << in.rdbuf();
  const Json want = Json::parse(ss.str());
  int code = -1;
  const std::string out = run_json(c.args, code);
  ASSERT_EQ(code, 0) << "ddpsim run " << c.args;
  const Json got = Json::parse(out);
  std::vector<std::string> diffs;
  compare(want, got, "", diffs);
  std::string all;
  for (size_t i = 0; i < diffs.size() && i < 20; ++i) all += "\n  " + diffs[i];
  EXPECT_TRUE(diffs.empty()) << diffs.size() << " differences for `ddpsim run " << c.args << "`:" << all;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenReport, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ddpsim
