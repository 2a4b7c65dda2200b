#pragma once
// One table per enumeration of a configuration value: the names a file may spell, and the value
// each stands for. to_string, the allowed list in error messages and the parser all read it, so a
// name is written once.
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace ddpsim::core {

template <class E>
class Names {
 public:
  Names(std::initializer_list<std::pair<const char*, E>> entries) : entries_(entries.begin(), entries.end()) {}

  std::string name(E value) const {
    for (const auto& [n, v] : entries_)
      if (v == value) return n;
    return "?";
  }
  // The value named `text`; `fallback` for a name not in the table (readers check the name first
  // against all(), so that case is already an input error).
  E value(const std::string& text, E fallback) const {
    for (const auto& [n, v] : entries_)
      if (text == n) return v;
    return fallback;
  }
  std::vector<std::string> all() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.first);
    return out;
  }

 private:
  std::vector<std::pair<const char*, E>> entries_;
};

}  // namespace ddpsim::core
