#include "core/json_reader.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace ddpsim::core {

void Diagnostics::add(const std::string& path, const std::string& message) {
  problems_.push_back(file_ + ": " + (path.empty() ? "/" : path) + ": " + message);
}

void Diagnostics::add_value(const std::string& path, const Json& value, const std::string& allowed) {
  add(path, short_dump(value) + " is not allowed; expected " + allowed);
}

void Diagnostics::throw_if_any() const {
  if (!problems_.empty()) throw ConfigError(problems_);
}

std::string short_dump(const Json& value) {
  std::string s = value.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string join_path(const std::string& parent, const std::string& key) {
  // JSON pointer escaping (RFC 6901).
  std::string k;
  for (char c : key) {
    if (c == '~')
      k += "~0";
    else if (c == '/')
      k += "~1";
    else
      k += c;
  }
  return parent + "/" + k;
}

ObjectReader::ObjectReader(const Json& value, std::string path, Diagnostics& diag)
    : value_(value), path_(std::move(path)), diag_(diag) {
  if (!value_.is_object()) {
    diag_.add_value(path_, value_, "an object");
    valid_ = false;
  }
}

bool ObjectReader::has(const std::string& key) const { return valid_ && value_.contains(key); }

const Json* ObjectReader::fetch(const std::string& key, bool required, const char* what) {
  seen_.insert(key);
  if (!valid_) return nullptr;
  auto it = value_.find(key);
  if (it == value_.end()) {
    if (required) diag_.add(join_path(path_, key), std::string("missing; required: ") + what);
    return nullptr;
  }
  return &*it;
}

std::optional<double> ObjectReader::number(const std::string& key, bool required, std::optional<double> min,
                                           bool min_exclusive, std::optional<double> max) {
  std::string allowed = "a number";
  if (min) allowed += min_exclusive ? " > " : " >= ", allowed += short_dump(*min);
  if (max) allowed += (min ? " and <= " : " <= ") + short_dump(*max);
  const Json* v = fetch(key, required, allowed.c_str());
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  double x = v->get<double>();
  if ((min && (min_exclusive ? x <= *min : x < *min)) || (max && x > *max)) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  return x;
}

double ObjectReader::number_or(const std::string& key, double fallback, std::optional<double> min, bool min_exclusive,
                               std::optional<double> max) {
  return number(key, false, min, min_exclusive, max).value_or(fallback);
}

std::optional<long long> ObjectReader::integer(const std::string& key, bool required, long long min, long long max) {
  std::string allowed = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  const Json* v = fetch(key, required, allowed.c_str());
  if (!v) return std::nullopt;
  if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>())) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  double x = v->get<double>();
  if (x < static_cast<double>(min) || x > static_cast<double>(max)) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  return static_cast<long long>(x);
}

long long ObjectReader::integer_or(const std::string& key, long long fallback, long long min, long long max) {
  return integer(key, false, min, max).value_or(fallback);
}

bool ObjectReader::boolean_or(const std::string& key, bool fallback) {
  const Json* v = fetch(key, false, "true or false");
  if (!v) return fallback;
  if (!v->is_boolean()) {
    diag_.add_value(join_path(path_, key), *v, "true or false");
    return fallback;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(const std::string& key, bool required,
                                                const std::vector<std::string>& allowed) {
  std::string what = "a string";
  if (!allowed.empty()) {
    what = "one of";
    for (size_t i = 0; i < allowed.size(); ++i) what += (i ? ", \"" : " \"") + allowed[i] + "\"";
  }
  const Json* v = fetch(key, required, what.c_str());
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    diag_.add_value(join_path(path_, key), *v, what);
    return std::nullopt;
  }
  auto s = v->get<std::string>();
  if (!allowed.empty()) {
    bool found = false;
    for (const auto& a : allowed) found = found || a == s;
    if (!found) {
      diag_.add_value(join_path(path_, key), *v, what);
      return std::nullopt;
    }
  }
  return s;
}

std::string ObjectReader::string_or(const std::string& key, const std::string& fallback,
                                    const std::vector<std::string>& allowed) {
  return string(key, false, allowed).value_or(fallback);
}

std::optional<double> ObjectReader::quantity(const std::string& key, Quantity kind, bool required, bool allow_zero) {
  std::string allowed = std::string(quantity_examples(kind)) + (allow_zero ? ", >= 0" : ", > 0");
  const Json* v = fetch(key, required, allowed.c_str());
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  auto parsed = parse_quantity(v->get<std::string>(), kind);
  if (!parsed || *parsed < 0 || (!allow_zero && *parsed == 0)) {
    diag_.add_value(join_path(path_, key), *v, allowed);
    return std::nullopt;
  }
  return parsed;
}

const Json* ObjectReader::raw(const std::string& key) { return fetch(key, false, ""); }

void ObjectReader::accept(const std::string& key) { seen_.insert(key); }

void ObjectReader::finish() {
  if (!valid_) return;
  std::string known;
  for (const auto& k : seen_) known += (known.empty() ? "" : ", ") + k;
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (!seen_.count(it.key())) diag_.add(join_path(path_, it.key()), "unknown key; allowed keys here: " + known);
  }
}

Json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into line:column for humans.
    size_t line = 1, col = 1;
    for (size_t i = 0; i < text.size() && i + 1 < e.byte; ++i) {
      if (text[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    throw ConfigError(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": not valid JSON (" + e.what() +
                      ")");
  }
}

Json read_json_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), file);
}

}  // namespace ddpsim::core
