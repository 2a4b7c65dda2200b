#pragma once
// Small text helpers shared by the parsers of lists on the command line and in JSON.
#include <string>
#include <string_view>
#include <vector>

namespace ddpsim::core {

// "a,b,,c" -> {"a", "b", "", "c"}: every item, empty ones included (callers refuse them with their
// own message); "" -> {}.
std::vector<std::string> split_list(std::string_view text, char sep = ',');

std::string to_lower(std::string_view text);

// The items of `v` with `sep` between them ({"a", "b"}, ", " -> "a, b"; {} -> "").
std::string join(const std::vector<std::string>& v, const std::string& sep);

// `v` as an ostream writes it by default (6 significant digits, shortest form).
std::string number_text(double v);
// `v` through printf's `format` (one double conversion, e.g. "%.1f"); at most 63 characters.
std::string printf_text(const char* format, double v);
// A share as a percentage with one decimal ("12.3%"); magnitudes under 0.05 % read "0.0%", never "-0.0%".
std::string percent1_text(double share);

// A text table: `head` and each row of `cells` on a line, every column as wide as its widest cell,
// two spaces apart, figures right-aligned (the first column left-aligned when `first_left`),
// trailing spaces dropped; tails[i], when given, is appended to row i as it is.
std::string aligned_columns(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                            const std::vector<std::string>& tails, bool first_left);

}  // namespace ddpsim::core
