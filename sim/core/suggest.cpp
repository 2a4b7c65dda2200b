#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace ddpsim::core {
namespace {

std::string fold(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == '.') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  std::string a, b;
  for (char c : a_in) a += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char c : b_in) b += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::vector<std::string> closest_names(std::string_view name, const std::vector<std::string>& candidates) {
  // Names longer than this are paths or garbage; comparing them costs time and suggests nothing.
  if (name.empty() || name.size() > 200) return {};
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  const std::string folded = fold(name);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& c = candidates[i];
    if (c == name) continue;
    const std::string fc = fold(c);
    size_t dist = edit_distance(name, c);
    // "llama7b" for "llama-7b", "h100" for "dgx-h100": a part of the other counts as one edit.
    if (!folded.empty() && folded.size() >= 3 &&
        (fc.find(folded) != std::string::npos || folded.find(fc) != std::string::npos))
      dist = std::min<size_t>(dist, 1);
    if (dist <= limit) scored.push_back({dist, i});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (const auto& [dist, i] : scored) {
    if (out.size() == 3) break;
    out.push_back(candidates[i]);
  }
  return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const auto best = closest_names(name, candidates);
  if (best.empty()) return "";
  std::string s = "; did you mean ";
  for (size_t i = 0; i < best.size(); ++i)
    s += (i == 0 ? "" : (i + 1 == best.size() ? " or " : ", ")) + ("\"" + best[i] + "\"");
  return s + "?";
}

}  // namespace ddpsim::core
