#pragma once
// "Did you mean": the known names closest to a misspelt one, for error messages about models,
// clusters, GPUs, links, scenarios and JSON keys.
#include <string>
#include <string_view>
#include <vector>

namespace ddpsim::core {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidates closest to `name` (at most three, best first, ties in the order given): those
// within max(2, |name| / 3) edits, or that contain `name` or are contained in it (ignoring case and
// the separators '-', '_', '.'). Empty when none is close.
std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates);

// "; did you mean \"a\"?" or "; did you mean \"a\" or \"b\"?"; "" when nothing is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace ddpsim::core
