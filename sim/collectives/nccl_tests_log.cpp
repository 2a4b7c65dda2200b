#include "collectives/nccl_tests_log.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::collectives {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// A finite decimal number: strtod's "nan", "inf", hex and overflow (1e999) are refused, and so is
// anything beyond 1e18 (no size, time or bandwidth nccl-tests prints comes near it).
bool to_double(const std::string& s, double& out) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno != ERANGE && std::isfinite(out) && std::fabs(out) <= 1e18;
}

bool to_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(s.c_str(), &end, 10);
  return end == s.c_str() + s.size() && errno != ERANGE;
}

// A banner integer ("nGpus 8", "NCCL version 2.18.3"): digits only, within [0, max].
bool banner_int(const std::string& s, int max, int& out) {
  long long v = 0;
  if (!to_int(s, v) || v < 0 || v > max) return false;
  out = static_cast<int>(v);
  return true;
}

bool is_wrong_field(const std::string& s) {
  double d;
  return s == "N/A" || to_double(s, d);
}

bool is_word(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

const char* kExpected =
    "a data row 'size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong' "
    "(sizes and counts integers, times and bandwidths numbers, #wrong a number or N/A), a '#' banner line "
    "or a blank line";

}  // namespace

namespace log_match {
namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool word(char c) { return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// A cursor over one candidate match: each step consumes what its pattern element matches and
// fails the candidate when it cannot (the elements used here never need backtracking: every
// greedy run is followed by something its characters cannot be).
struct Cur {
  std::string_view s;
  size_t i;
  bool ok = true;
  bool lit(std::string_view w) {
    if (ok && s.substr(i, w.size()) == w) {
      i += w.size();
      return true;
    }
    return ok = false;
  }
  size_t spaces(bool one) {  // \s* or \s+
    const size_t b = i;
    while (ok && i < s.size() && space(s[i])) ++i;
    if (one && i == b) ok = false;
    return i - b;
  }
  std::string_view run(bool (*in)(char)) {  // [class]+
    const size_t b = i;
    while (ok && i < s.size() && in(s[i])) ++i;
    if (i == b) ok = false;
    return s.substr(b, i - b);
  }
};

bool nonspace(char c) { return !space(c); }

// Tries `at` at every start of `s` where `head` occurs (regex_search on a pattern that begins
// with a literal) and returns the first success.
template <class F>
auto search(std::string_view s, std::string_view head, F at) -> decltype(at(size_t{})) {
  for (size_t p = s.find(head); p != std::string_view::npos; p = s.find(head, p + 1))
    if (auto r = at(p)) return r;
  return {};
}

}  // namespace

size_t mpi_prefix(std::string_view s) {
  Cur c{s, 0};
  c.lit("[");
  c.run(digit);
  c.lit(",");
  c.run(digit);
  c.lit("]<");
  if (!c.ok) return 0;
  if (!c.lit("stdout")) {
    c.ok = true;
    c.lit("stderr");
  }
  c.lit(">:");
  return c.ok ? c.i : 0;
}

bool debug_tag(std::string_view s) {
  for (size_t p = s.find("NCCL "); p != std::string_view::npos; p = s.find("NCCL ", p + 1)) {
    if (p > 0 && word(s[p - 1])) continue;
    for (std::string_view tag : {"INFO", "WARN", "TRACE"}) {
      const size_t e = p + 5 + tag.size();
      if (s.substr(p + 5, tag.size()) == tag && (e == s.size() || !word(s[e]))) return true;
    }
  }
  return false;
}

std::optional<std::array<std::string, 3>> version(std::string_view s) {
  return search(s, "NCCL version", [&](size_t p) -> std::optional<std::array<std::string, 3>> {
    Cur c{s, p + 12};
    c.spaces(true);
    const auto a = c.run(digit);
    c.lit(".");
    const auto b = c.run(digit);
    c.lit(".");
    const auto d = c.run(digit);
    if (!c.ok) return std::nullopt;
    return std::array<std::string, 3>{std::string(a), std::string(b), std::string(d)};
  });
}

std::optional<std::string> library_code(std::string_view s) {
  return search(s, "nccl-library=", [&](size_t p) -> std::optional<std::string> {
    Cur c{s, p + 13};
    const auto d = c.run(digit);
    if (!c.ok || d.size() < 4 || d.size() > 6 || (c.i < s.size() && word(s[c.i]))) return std::nullopt;
    return std::string(d);
  });
}

std::optional<std::string> test_name(std::string_view s) {
  return search(s, "Collective test starting:", [&](size_t p) -> std::optional<std::string> {
    Cur c{s, p + 25};
    c.spaces(false);
    const auto n = c.run(nonspace);
    if (!c.ok) return std::nullopt;
    return std::string(n);
  });
}

std::optional<std::array<std::string, 2>> threads(std::string_view s) {
  return search(s, "nThread", [&](size_t p) -> std::optional<std::array<std::string, 2>> {
    Cur c{s, p + 7};
    c.spaces(true);
    const auto a = c.run(digit);
    c.spaces(true);
    c.lit("nGpus");
    c.spaces(true);
    const auto b = c.run(digit);
    if (!c.ok) return std::nullopt;
    return std::array<std::string, 2>{std::string(a), std::string(b)};
  });
}

std::optional<std::string> cuda_graph(std::string_view s) {
  return search(s, "graph:", [&](size_t p) -> std::optional<std::string> {
    if (p > 0 && word(s[p - 1])) return std::nullopt;  // \b before 'g'
    Cur c{s, p + 6};
    c.spaces(false);
    const auto d = c.run(digit);
    if (!c.ok) return std::nullopt;
    return std::string(d);
  });
}

std::optional<std::string> device(std::string_view s) {
  Cur c{s, 0};
  c.lit("#");
  for (std::string_view w : {"Rank", "Group", "Pid"}) {
    c.spaces(true);
    c.lit(w);
    c.spaces(true);
    c.run(digit);
  }
  c.spaces(true);
  c.lit("on");
  c.spaces(true);
  c.run(nonspace);
  c.spaces(true);
  c.lit("device");
  c.spaces(true);
  c.run(digit);
  c.spaces(true);
  c.lit("[");
  if (!c.ok) return std::nullopt;
  const size_t close = s.find(']', c.i);
  if (close == std::string_view::npos) return std::nullopt;
  c.i = close + 1;
  c.spaces(true);
  if (!c.ok) return std::nullopt;
  // (.*?)\s*$: the rest without its trailing white space; '.' is anything but a line terminator.
  std::string_view rest = s.substr(c.i);
  size_t e = rest.size();
  while (e > 0 && space(rest[e - 1])) --e;
  rest = rest.substr(0, e);
  if (rest.find_first_of("\n\r") != std::string_view::npos) return std::nullopt;
  return std::string(rest);
}

std::optional<std::string> avg_bus_bandwidth(std::string_view s) {
  Cur c{s, 0};
  c.lit("#");
  c.spaces(false);
  c.lit("Avg bus bandwidth");
  c.spaces(false);
  c.lit(":");
  c.spaces(false);
  const auto v = c.run(nonspace);
  if (!c.ok) return std::nullopt;
  return std::string(v);
}

}  // namespace log_match

NcclLogError::NcclLogError(const std::string& file, int line, const std::string& text, const std::string& expected)
    : std::runtime_error(file + ":" + std::to_string(line) + ": cannot parse \"" + text + "\": expected " + expected),
      file_(file),
      line_(line) {}

NcclTestsLog parse_nccl_tests_log(std::istream& in, const std::string& filename) {
  NcclTestsLog log;
  log.filename = filename;
  std::string raw;
  int lineno = 0;
  bool banner_since_row = true;
  double prev_size = -1;
  // nccl-tests 2.14+ banner: "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102"
  // (NCCL_VERSION_CODE of the library it ran with: 2.31.2 here).
  // Before 2.9 NCCL_VERSION_CODE was major*1000 + minor*100 + patch (2.8.3 = 2803).
  auto read_version = [&](const std::string& t) {
    if (log.nccl_version != 0) return;
    if (const auto m = log_match::version(t)) {
      int major = 0, minor = 0, patch = 0;
      if (!banner_int((*m)[0], 99, major) || !banner_int((*m)[1], 99, minor) || !banner_int((*m)[2], 99, patch))
        throw NcclLogError(filename, lineno, t.substr(0, 120),
                           "'NCCL version MAJOR.MINOR.PATCH' with each part an integer in [0, 99]");
      log.nccl_version = major * 10000 + minor * 100 + patch;
    } else if (const auto code_text = log_match::library_code(t)) {
      int code = 0;
      if (!banner_int(*code_text, 999999, code)) return;
      if (code >= 20000 && code < 30000) log.nccl_version = code;
      if (code >= 2000 && code < 3000) log.nccl_version = 20000 + code / 100 % 10 * 100 + code % 100;
    }
  };
  while (std::getline(in, raw)) {
    ++lineno;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    // mpirun --tag-output prefixes every line with "[1,0]<stdout>:".
    const std::string t = trim(raw.substr(log_match::mpi_prefix(raw)));
    if (t.empty()) continue;
    if (log_match::debug_tag(t)) {  // NCCL_DEBUG output interleaved with the table
      read_version(t);
      continue;
    }
    if (t[0] == '#') {
      read_version(t);
      if (log.test_name.empty())
        if (auto name = log_match::test_name(t)) log.test_name = *name;
      if (const auto m = log_match::threads(t)) {
        if (!banner_int((*m)[0], 1 << 20, log.nthread) || !banner_int((*m)[1], 1024, log.ngpus))
          throw NcclLogError(filename, lineno, t.substr(0, 120),
                             "'nThread N nGpus G' with N an integer in [0, 1048576] and G in [0, 1024]");
        banner_since_row = true;
        // nccl-tests -G N (CUDA graph launches; printed as "graph: N" on the same banner line
        // since -G exists): absent from older banners, which then leave it unstated (-1).
        log.cuda_graph = -1;
        if (const auto g = log_match::cuda_graph(t))
          if (!banner_int(*g, 1 << 20, log.cuda_graph))
            throw NcclLogError(filename, lineno, t.substr(0, 120),
                               "'graph: N' (nccl-tests -G, CUDA graph launches) with N an integer in [0, 1048576]");
      } else if (auto dev = log_match::device(t)) {
        log.devices.push_back(*dev);
      } else if (const auto avg = log_match::avg_bus_bandwidth(t)) {
        double v;
        if (!to_double(*avg, v)) throw NcclLogError(filename, lineno, t, "a number after '# Avg bus bandwidth :'");
        log.avg_bus_bandwidth.push_back(v);
      }
      continue;
    }
    std::istringstream ss(t);
    std::vector<std::string> f;
    for (std::string w; ss >> w;) f.push_back(w);
    // Layouts by field count: 13 = with root, 12 = with redop, 11 = oldest (no redop).
    int head = 0;  // fields before the out-of-place time
    NcclTestsRow r;
    if (f.size() == 13)
      head = 5;
    else if (f.size() == 12)
      head = 4;
    else if (f.size() == 11)
      head = 3;
    else
      throw NcclLogError(
          filename, lineno, t,
          std::string(kExpected) + " (got " + std::to_string(f.size()) + " fields; rows have 11, 12 or 13)");
    long long count = 0, root = -1;
    double size = 0;
    auto need = [&](bool ok, const std::string& what) {
      if (!ok) throw NcclLogError(filename, lineno, t, what);
    };
    need(to_double(f[0], size) && size >= 0 && std::floor(size) == size,
         "column 1 (size, bytes) to be a non-negative integer, got \"" + f[0] + "\"");
    need(to_int(f[1], count) && count >= 0,
         "column 2 (count, elements) to be a non-negative integer, got \"" + f[1] + "\"");
    need(is_word(f[2]), "column 3 (type) to be a name like float, got \"" + f[2] + "\"");
    if (head >= 4) need(is_word(f[3]), "column 4 (redop) to be a name like sum, got \"" + f[3] + "\"");
    if (head == 5) need(to_int(f[4], root), "column 5 (root) to be an integer, got \"" + f[4] + "\"");
    double v[6];
    const char* names[6] = {"out-of-place time", "out-of-place algbw", "out-of-place busbw",
                            "in-place time",     "in-place algbw",     "in-place busbw"};
    const int cols[6] = {head, head + 1, head + 2, head + 4, head + 5, head + 6};
    for (int i = 0; i < 6; ++i)
      need(to_double(f[cols[i]], v[i]) && (i % 3 == 0 ? v[i] > 0 : v[i] >= 0),
           "column " + std::to_string(cols[i] + 1) + " (" + names[i] + ") to be a finite number " +
               (i % 3 == 0 ? "> 0" : ">= 0") + ", got \"" + f[cols[i]] + "\"");
    need(is_wrong_field(f[head + 3]), "column " + std::to_string(head + 4) +
                                          " (out-of-place #wrong) to be a number or N/A, got \"" + f[head + 3] + "\"");
    need(is_wrong_field(f[head + 7]), "column " + std::to_string(head + 8) +
                                          " (in-place #wrong) to be a number or N/A, got \"" + f[head + 7] + "\"");
    r.size_bytes = size;
    r.count = count;
    r.type = f[2];
    if (head >= 4) r.redop = f[3];
    r.root = static_cast<int>(root);
    r.oop_time_us = v[0];
    r.oop_algbw = v[1];
    r.oop_busbw = v[2];
    r.oop_wrong = f[head + 3];
    r.ip_time_us = v[3];
    r.ip_algbw = v[4];
    r.ip_busbw = v[5];
    r.ip_wrong = f[head + 7];
    if (log.runs.empty() || banner_since_row || size <= prev_size) {
      NcclTestsRun run;
      run.first_row = log.rows.size();
      // A run without a banner of its own (sizes started over) does not inherit the last one.
      run.nthread = banner_since_row ? log.nthread : 0;
      run.ngpus = banner_since_row ? log.ngpus : 0;
      run.cuda_graph = banner_since_row ? log.cuda_graph : -1;
      log.runs.push_back(run);
    }
    banner_since_row = false;
    prev_size = size;
    ++log.runs.back().row_count;
    log.rows.push_back(r);
  }
  return log;
}

namespace {
// The out-of-place row with the largest algbw >= 1 GB/s (most printed digits), or null.
const NcclTestsRow* widest_row(const std::vector<NcclTestsRow>& rows) {
  const NcclTestsRow* best = nullptr;
  for (const auto& r : rows)
    if (r.oop_algbw >= 1.0 && (!best || r.oop_algbw > best->oop_algbw)) best = &r;
  return best;
}
}  // namespace

int NcclTestsLog::nranks_from_bandwidths(bool one_phase) const {
  const NcclTestsRow* best = widest_row(rows);
  if (!best) return 0;
  const double ratio = best->oop_busbw / best->oop_algbw;  // 2(n-1)/n in [1, 2); one phase (n-1)/n in [.5, 1)
  const double r = one_phase ? 2 * ratio : ratio;
  if (!(r >= 0.99) || !(r < 2.0)) return 0;
  const double n = 2.0 / (2.0 - r);
  const long rounded = std::lround(n);
  // Two printed decimals on algbw >= 1: the ratio is good to ~1 %, so n to ~1 % of n^2/2.
  if (rounded < 2 || std::abs(n - rounded) > 0.02 * rounded * rounded / 2 + 0.05) return 0;
  return static_cast<int>(rounded);
}

std::string nccl_test_of(const NcclTestsLog& log) {
  if (!log.test_name.empty()) {
    std::string name = log.test_name;
    const std::string mpi = "_mpi";
    if (name.size() > mpi.size() && name.compare(name.size() - mpi.size(), mpi.size(), mpi) == 0)
      name.resize(name.size() - mpi.size());
    return name;
  }
  const NcclTestsRow* best = widest_row(log.rows);
  if (!best) return "";
  if (best->root >= 0) return "";  // a rooted test (broadcast_perf, reduce_perf)
  // alltoall_perf prints as all_gather_perf does ("none", (n-1)/n): only its banner tells it apart.
  if (best->redop == "none") return "all_gather_perf";
  // 2(n-1)/n >= 1, printed to two decimals; (n-1)/n < .999 up to 1,000 ranks.
  if (best->oop_busbw / best->oop_algbw >= 0.999) return "all_reduce_perf";
  return best->redop.empty() ? "" : "reduce_scatter_perf";
}

NcclTestsLog parse_nccl_tests_log_file(const std::string& path) {
  std::istringstream in(core::read_text_file(path));  // regular files only, size-limited
  return parse_nccl_tests_log(in, path);
}

}  // namespace ddpsim::collectives
