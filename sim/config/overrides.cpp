#include "config/overrides.hpp"

#include "core/error.hpp"

namespace ddpsim::config {

core::Json parse_override_value(const std::string& text, const std::string& origin) {
  if (auto j = core::parse_json_if_json(text, origin)) return std::move(*j);
  return core::Json(text);
}

void set_path(core::Json& doc, const std::string& dotted, const core::Json& value, const std::string& origin) {
  if (dotted.empty()) throw core::ConfigError(origin + ": empty path; expected a.b.c=value");
  core::Json* node = &doc;
  size_t start = 0;
  std::string walked;
  int depth = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (++depth > core::kMaxJsonDepth)
      throw core::ConfigError(origin + ": the path has more than " + std::to_string(core::kMaxJsonDepth) +
                              " components; expected a.b.c=value with at most " + std::to_string(core::kMaxJsonDepth));
    if (key.empty()) throw core::ConfigError(origin + ": empty component in path \"" + dotted + "\"");
    if (!node->is_object())
      throw core::ConfigError(origin + ": /" + walked + " is " + core::short_dump(*node) + ", not an object, so \"" +
                              key + "\" cannot be set inside it");
    walked += (walked.empty() ? "" : "/") + key;
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    if (!node->contains(key)) (*node)[key] = core::Json::object();
    node = &(*node)[key];
    start = dot + 1;
  }
}

void apply_overrides(core::Json& doc, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) {
    auto eq = o.find('=');
    std::string origin = "--set " + o;
    if (eq == std::string::npos || eq == 0)
      throw core::ConfigError(origin + ": expected PATH=VALUE, e.g. ddp.bucket_cap_mb=50");
    set_path(doc, o.substr(0, eq), parse_override_value(o.substr(eq + 1), origin), origin);
  }
}

}  // namespace ddpsim::config
