#pragma once
// Typed errors thrown by library code; only main() turns them into messages and exit codes.
#include <stdexcept>
#include <string>
#include <vector>

namespace ddpsim::core {

// An input problem (file, JSON path, value, what is allowed). Maps to exit code 2.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> problems)
      : std::runtime_error(join(problems)), problems_(std::move(problems)) {}
  explicit ConfigError(const std::string& problem) : ConfigError(std::vector<std::string>{problem}) {}
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  static std::string join(const std::vector<std::string>& problems) {
    std::string out;
    for (size_t i = 0; i < problems.size(); ++i) {
      if (i) out += '\n';
      out += problems[i];
    }
    return out;
  }
  std::vector<std::string> problems_;
};

// A failure while simulating or writing results (not the user's input). Maps to exit code 1.
class SimulationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ddpsim::core
