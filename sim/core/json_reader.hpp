#pragma once
// Strict reading of JSON config objects: every key read is marked, unknown keys are errors, and
// every problem of a file is collected so that one error lists them all (STYLE.md).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace ddpsim::core {

using Json = nlohmann::json;

// Collects problems as "file: /json/path: value is not ...; allowed: ...".
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void add(const std::string& path, const std::string& message);
  void add_value(const std::string& path, const Json& value, const std::string& what_is_allowed);
  bool ok() const { return problems_.empty(); }
  const std::string& file() const { return file_; }
  const std::vector<std::string>& problems() const { return problems_; }
  // Throws ConfigError with every collected problem.
  void throw_if_any() const;

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

std::string short_dump(const Json& value);
std::string join_path(const std::string& parent, const std::string& key);

class ObjectReader {
 public:
  // `value` must be an object; otherwise the problem is recorded and every read returns defaults.
  ObjectReader(const Json& value, std::string path, Diagnostics& diag);

  bool has(const std::string& key) const;
  const std::string& path() const { return path_; }
  Diagnostics& diagnostics() { return diag_; }

  // Numbers. `min`/`max` bounds; `min_exclusive` makes the lower bound strict.
  std::optional<double> number(const std::string& key, bool required, std::optional<double> min = {},
                               bool min_exclusive = false, std::optional<double> max = {});
  double number_or(const std::string& key, double fallback, std::optional<double> min = {}, bool min_exclusive = false,
                   std::optional<double> max = {});
  std::optional<long long> integer(const std::string& key, bool required, long long min, long long max);
  long long integer_or(const std::string& key, long long fallback, long long min, long long max);
  bool boolean_or(const std::string& key, bool fallback);
  std::optional<std::string> string(const std::string& key, bool required,
                                    const std::vector<std::string>& allowed = {});
  std::string string_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& allowed = {});
  // A quantity with a unit ("25MiB"); must be > 0 unless allow_zero.
  std::optional<double> quantity(const std::string& key, Quantity kind, bool required, bool allow_zero = false);
  // Raw access (marks the key as known). Returns nullptr when absent.
  const Json* raw(const std::string& key);
  // Marks keys that a caller handles itself.
  void accept(const std::string& key);
  // Records every key that was never read.
  void finish();

 private:
  const Json* fetch(const std::string& key, bool required, const char* what);
  const Json& value_;
  std::string path_;
  Diagnostics& diag_;
  bool valid_ = true;
  std::set<std::string> seen_;
};

// Limits on what is read, so that no input can exhaust the stack or the memory.
inline constexpr int kMaxJsonDepth = 256;   // nesting of arrays and objects
inline constexpr double kMaxNumber = 1e18;  // the largest number a setting without its own bound takes
// Input files larger than this are refused; $DDPSIM_MAX_INPUT_BYTES raises it.
std::size_t max_input_bytes();

// Reads a whole input file: refuses what is not a regular file (directories, devices such as
// /dev/zero, fifos) and files over max_input_bytes(), as ConfigError naming the file.
std::string read_text_file(const std::string& file);

// Parses a JSON file strictly: syntax errors, numbers beyond double range (1e999), duplicate keys
// (nlohmann would keep the last one silently) and nesting deeper than kMaxJsonDepth become
// ConfigError naming the file and the line:column or JSON path. The parse is iterative (SAX), so
// no input can overflow the stack.
Json read_json_file(const std::string& file);
Json parse_json_text(const std::string& text, const std::string& file);
// As parse_json_text, but text that is not JSON at all gives nullopt (`--set x=hello` is a string);
// JSON that is refused (1e999, duplicate keys, too deep) still throws ConfigError.
std::optional<Json> parse_json_if_json(const std::string& text, const std::string& file);

// The first non-finite number in `value` (JSON has none, but computed documents can), as a JSON
// path; nullopt when all numbers are finite. Iterative.
std::optional<std::string> find_non_finite(const Json& value);

}  // namespace ddpsim::core
