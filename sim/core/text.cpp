#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace ddpsim::core {

std::vector<std::string> split_list(std::string_view text, char sep) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string printf_text(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string aligned_columns(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                            const std::vector<std::string>& tails, bool first_left) {
  std::vector<size_t> width(head.size());
  for (size_t k = 0; k < head.size(); ++k) {
    width[k] = head[k].size();
    for (const auto& c : cells) width[k] = std::max(width[k], c[k].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string l;
    for (size_t k = 0; k < c.size(); ++k) {
      const std::string pad(width[k] - c[k].size(), ' ');
      l += std::string(k ? 2 : 0, ' ') + (k == 0 && first_left ? c[k] + pad : pad + c[k]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l;
  };
  std::string o = line(head) + "\n";
  for (size_t i = 0; i < cells.size(); ++i) o += line(cells[i]) + (i < tails.size() ? tails[i] : "") + "\n";
  return o;
}

std::string percent1_text(double share) {
  double p = share * 100.0;
  if (std::abs(p) < 0.05) p = 0.0;
  return printf_text("%.1f%%", p);
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace ddpsim::core
