#pragma once
// Running the ddpsim binary from a test: exit code and output, with the sanitizer runtime's own
// warnings (ASan under SimGrid's context switches prints "WARNING: ASan is ignoring requested
// __asan_handle_no_return") taken out of stderr, so that `--json -` output stays parseable and
// messages compare the same in the sanitizer build. Reports of real errors are kept.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

namespace ddpsim::testing {

struct CliResult {
  int code = -1;    // exit status; 128 + N when killed by signal N
  std::string out;  // stdout, then stderr (sanitizer runtime warnings removed)
  std::string err;  // stderr alone (filtered the same way)
};

inline std::string ddpsim_bin() {
  const char* b = std::getenv("DDPSIM_BIN");
  return b ? b : DDPSIM_BIN_PATH;
}

// One line of that warning (its first line, or one of the two that follow it).
inline bool is_sanitizer_warning_line(const std::string& line) {
  const bool runtime_line = line.rfind("==", 0) == 0 && line.find("==", 2) != std::string::npos;
  return (runtime_line &&
          line.find("WARNING: ASan is ignoring requested __asan_handle_no_return") != std::string::npos) ||
         line.rfind("False positive error reports may follow", 0) == 0 ||
         line.rfind("For details see https://github.com/google/sanitizers/issues/189", 0) == 0;
}

inline std::string without_sanitizer_warnings(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  bool in_warning = false;
  while (std::getline(in, line)) {
    const bool runtime_line = line.rfind("==", 0) == 0 && line.find("==", 2) != std::string::npos;
    if (runtime_line && line.find("WARNING: ASan is ignoring requested __asan_handle_no_return") != std::string::npos) {
      in_warning = true;
      continue;
    }
    if (in_warning && (line.rfind("False positive error reports may follow", 0) == 0 ||
                       line.rfind("For details see https://github.com/google/sanitizers/issues/189", 0) == 0))
      continue;
    in_warning = false;
    out += line + "\n";
  }
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

// A command refused as bad input: exit 2 and every one of `needles` (the file, the JSON path, the
// value, what is allowed...) in what the user sees. Use as EXPECT_TRUE(refused_with(r, {...})).
inline ::testing::AssertionResult refused_with(const CliResult& r, std::initializer_list<std::string> needles) {
  if (r.code != 2) return ::testing::AssertionFailure() << "exit " << r.code << ", expected 2 (bad input):\n" << r.out;
  for (const auto& n : needles)
    if (r.out.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "\"" << n << "\" is not in the output:\n" << r.out;
  return ::testing::AssertionSuccess();
}

// Runs `ddpsim ARGS` through the shell (ARGS may hold redirections and quotes).
inline CliResult run_cli(const std::string& args) {
  CliResult r;
  char tmpl[] = "/tmp/ddpsim-stderr-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return r;
  ::close(fd);
  const std::string cmd = ddpsim_bin() + " " + args + " 2>" + tmpl;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p) {
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  }
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(tmpl);
  r.err = without_sanitizer_warnings(ss.str());
  r.out += r.err;
  return r;
}

}  // namespace ddpsim::testing
