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

}  // namespace ddpsim::core
