#include "core/json_reader.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/suggest.hpp"

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
  // No setting is meaningful beyond kMaxNumber; larger values only overflow later products.
  if (!max && std::fabs(x) > kMaxNumber) {
    diag_.add_value(join_path(path_, key), *v, allowed + (min ? " and <= " : " <= ") + short_dump(kMaxNumber));
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
      diag_.add_value(join_path(path_, key), *v, what + did_you_mean(s, allowed));
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
  std::string allowed = std::string(quantity_examples(kind)) + (allow_zero ? ", >= 0" : ", > 0") + ", at most " +
                        quantity_range_text(kind).substr(quantity_range_text(kind).find(" and ") + 5);
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
    if (!seen_.count(it.key()))
      diag_.add(join_path(path_, it.key()),
                "unknown key" + did_you_mean(it.key(), std::vector<std::string>(seen_.begin(), seen_.end())) +
                    "; allowed keys here: " + known);
  }
}

namespace {

// line:column of byte offset `byte` (1-based, as nlohmann counts) for humans.
std::string line_col(const std::string& text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < text.size() && i + 1 < byte; ++i) {
    if (text[i] == '\n')
      ++line, col = 1;
    else
      ++col;
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Builds the document without recursion and refuses what nlohmann's DOM parser lets through.
class StrictSax final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return put(Json(nullptr)); }
  bool boolean(bool v) override { return put(Json(v)); }
  bool number_integer(number_integer_t v) override { return put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(Json(v)); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) return fail(path() + ": " + text + " is not allowed; expected a finite number");
    return put(Json(v));
  }
  bool string(string_t& v) override { return put(Json(std::move(v))); }
  bool binary(binary_t& v) override { return put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (f.node->contains(k))
      return fail(core::join_path(path(true), k) + ": duplicate key \"" + short_key(k) +
                  "\"; each key may appear once in an object");
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) override {
    position_ = position;
    if (ex.id == 406 || ex.id == 407) {  // out_of_range: number overflow
      message_ = std::string(last_token.substr(0, 60)) + " is not allowed; expected a finite number";
    } else {
      message_ = std::string("not valid JSON (") + ex.what() + ")";
      syntax_ = true;
    }
    return false;
  }

  Json result;
  std::string message_;       // set when parsing stopped
  std::size_t position_ = 0;  // byte offset of a syntax problem (0: a path problem)
  bool syntax_ = false;       // the text is not JSON at all (rather than JSON we refuse)

 private:
  struct Frame {
    Json* node;
    std::string key;  // the pending key when node is an object
  };
  static std::string short_key(const std::string& k) { return k.size() > 60 ? k.substr(0, 57) + "..." : k; }
  // The JSON pointer of the value being read; `object_only`: of the innermost open object itself.
  std::string path(bool object_only = false) const {
    std::string p;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (object_only && i + 1 == stack_.size()) break;
      if (p.size() > 200) return p + "/...";
      // An array's open child is already its last element; the top frame's next value is not yet.
      const std::size_t index = f.node->size() - (i + 1 < stack_.size() && f.node->size() > 0 ? 1 : 0);
      p = f.node->is_object() ? core::join_path(p, f.key) : p + "/" + std::to_string(index);
    }
    return p.empty() && !object_only ? "/" : p;
  }
  Json* insert(Json&& v) {
    if (stack_.empty()) {
      result = std::move(v);
      return &result;
    }
    Frame& f = stack_.back();
    if (f.node->is_object()) return &((*f.node)[f.key] = std::move(v));
    f.node->push_back(std::move(v));
    return &f.node->back();
  }
  bool put(Json&& v) {
    insert(std::move(v));
    return true;
  }
  bool open(Json&& v) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth)
      return fail(path() + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels is not allowed; expected at most " + std::to_string(kMaxJsonDepth) +
                  " levels of arrays and objects");
    // The object or array is inserted into its parent before the parent can grow again, so the
    // pointer stays valid until it is closed.
    stack_.push_back({insert(std::move(v)), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  bool fail(std::string message) {
    message_ = std::move(message);
    return false;
  }
  std::vector<Frame> stack_;
};

}  // namespace

std::optional<Json> parse_json_if_json(const std::string& text, const std::string& file) {
  StrictSax sax;
  bool ok = false;
  try {
    ok = Json::sax_parse(text, &sax);
  } catch (const Json::exception& e) {  // not expected: sax_parse reports through parse_error
    throw ConfigError(file + ": not valid JSON (" + e.what() + ")");
  }
  if (ok) return std::move(sax.result);
  if (sax.syntax_) return std::nullopt;
  if (sax.position_ > 0) throw ConfigError(file + ":" + line_col(text, sax.position_) + ": " + sax.message_);
  throw ConfigError(file + ": " + sax.message_);
}

Json parse_json_text(const std::string& text, const std::string& file) {
  StrictSax sax;
  bool ok = false;
  try {
    ok = Json::sax_parse(text, &sax);
  } catch (const Json::exception& e) {
    throw ConfigError(file + ": not valid JSON (" + e.what() + ")");
  }
  if (ok) return std::move(sax.result);
  if (sax.position_ > 0) throw ConfigError(file + ":" + line_col(text, sax.position_) + ": " + sax.message_);
  throw ConfigError(file + ": " + sax.message_);
}

std::size_t max_input_bytes() {
  if (const char* env = std::getenv("DDPSIM_MAX_INPUT_BYTES"); env && *env) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (errno == 0 && end && *end == '\0' && v > 0) return static_cast<std::size_t>(v);
  }
  return std::size_t{64} << 20;  // 64 MiB: the largest bundled input is under 2 MB
}

std::string read_text_file(const std::string& file) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(file, ec);  // follows symlinks
  if (ec || !fs::exists(st)) throw ConfigError(file + ": cannot open file (it does not exist)");
  if (!fs::is_regular_file(st))
    throw ConfigError(file + ": is " +
                      (fs::is_directory(st) ? "a directory" : "not a regular file (a device, fifo or socket)") +
                      "; expected a regular file");
  const std::size_t limit = max_input_bytes();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file + ": cannot open file");
  std::string text;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limit)
      throw ConfigError(file + ": larger than the input limit of " + std::to_string(limit) +
                        " bytes; set DDPSIM_MAX_INPUT_BYTES to raise it");
  }
  if (in.bad()) throw ConfigError(file + ": read failed");
  return text;
}

Json read_json_file(const std::string& file) { return parse_json_text(read_text_file(file), file); }

std::optional<std::string> find_non_finite(const Json& value) {
  std::vector<std::pair<const Json*, std::string>> todo{{&value, ""}};
  while (!todo.empty()) {
    auto [v, p] = std::move(todo.back());
    todo.pop_back();
    if (v->is_number_float() && !std::isfinite(v->get<double>())) return p.empty() ? "/" : p;
    if (v->is_object())
      for (auto it = v->begin(); it != v->end(); ++it) todo.emplace_back(&*it, join_path(p, it.key()));
    else if (v->is_array())
      for (std::size_t i = v->size(); i-- > 0;) todo.emplace_back(&(*v)[i], p + "/" + std::to_string(i));
  }
  return std::nullopt;
}

}  // namespace ddpsim::core
