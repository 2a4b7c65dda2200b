#include "collectives/nccl_tests_log.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "collectives/nccl_names.hpp"
#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/text.hpp"

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

bool digits(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i)
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}
// "2026-07-09" and "14:03:59", as util.cu's TIME_STRING_FORMAT "%Y-%m-%d %H:%M:%S" prints them.
bool is_date(const std::string& s) {
  return s.size() == 10 && digits(s, 0, 4) && s[4] == '-' && digits(s, 5, 2) && s[7] == '-' && digits(s, 8, 2);
}
bool is_clock(const std::string& s) {
  return s.size() == 8 && digits(s, 0, 2) && s[2] == ':' && digits(s, 3, 2) && s[5] == ':' && digits(s, 6, 2);
}

// The column header "#  size  count  type  redop  root  time  algbw  busbw  #wrong ..." (util.cu
// writeResultHeader): whether its time column is "cputime" (-C 1); nullopt for any other line.
std::optional<bool> column_header(const std::string& t) {
  std::istringstream ss(t);
  std::vector<std::string> w;
  for (std::string x; ss >> x;) w.push_back(x);
  if (w.size() < 4 || w[0] != "#" || w[1] != "size" || w[2] != "count") return std::nullopt;
  bool cpu = false, gpu = false;
  for (const auto& x : w) {
    cpu = cpu || x == "cputime";
    gpu = gpu || x == "time";
  }
  if (!cpu && !gpu) return std::nullopt;
  return cpu;
}

// nccl-tests -C 1 prints the host's enqueue time per call in the time columns; algbw is size over
// the collective's time (common.cu BenchTime: getBw from deltaSec). The collective's time is
// size / algbw where algbw has three significant digits (>= 1 GB/s, printed "%6.2f"); otherwise
// 0, which every consumer skips. Returns whether the out-of-place time could be derived.
bool time_from_algbw(NcclTestsRow& r) {
  auto derive = [&](double algbw) { return algbw >= 1.0 ? r.size_bytes / (algbw * 1e3) : 0.0; };
  r.oop_time_us = derive(r.oop_algbw);
  r.ip_time_us = derive(r.ip_algbw);
  return r.oop_time_us > 0;
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

size_t srun_label(std::string_view s) {
  Cur c{s, 0};
  while (c.i < s.size() && s[c.i] == ' ') ++c.i;
  c.run(digit);
  c.lit(": ");
  return c.ok ? c.i : 0;
}

std::optional<std::string> bracket_rank(std::string_view s) {
  Cur c{s, 0};
  c.lit("[");
  c.run(digit);
  c.lit("]");
  if (!c.ok) return std::nullopt;
  return std::string(s.substr(0, c.i));
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

namespace {
// `name`\s+(\d+)\.(\d+)\.(\d+): the first match's three groups.
std::optional<std::array<std::string, 3>> named_version(std::string_view s, std::string_view name) {
  return search(s, name, [&](size_t p) -> std::optional<std::array<std::string, 3>> {
    Cur c{s, p + name.size()};
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
}  // namespace

std::optional<std::array<std::string, 3>> version(std::string_view s) { return named_version(s, "NCCL version"); }

std::optional<std::array<std::string, 3>> ofi_version(std::string_view s) { return named_version(s, "aws-ofi-nccl"); }

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

std::optional<std::array<std::string, 2>> device(std::string_view s) {
  Cur c{s, 0};
  c.lit("#");
  c.spaces(true);
  c.lit("Rank");
  c.spaces(true);
  c.run(digit);
  c.spaces(true);
  if (c.ok && s.substr(c.i, 5) == "Group") {  // (Group\s+\d+\s+)? -- nccl-tests before 2.0 had no group
    const Cur before = c;
    c.lit("Group");
    c.spaces(true);
    c.run(digit);
    c.spaces(true);
    if (!c.ok) c = before;
  }
  c.lit("Pid");
  c.spaces(true);
  c.run(digit);
  c.spaces(true);
  c.lit("on");
  c.spaces(true);
  const size_t host_at = c.i;
  c.run(nonspace);
  const size_t host_end = c.i;
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
  return std::array<std::string, 2>{std::string(s.substr(host_at, host_end - host_at)), std::string(rest)};
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
  bool header_since_row = false;
  bool host_time = false;  // the last column header said "cputime" (nccl-tests -C 1)
  int blocking = 0;        // the last banner's "# Blocking Enabled" mode (nccl-tests -z)
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
    // mpirun --tag-output prefixes every line with "[1,0]<stdout>:", srun --label with "0: ", and
    // Intel MPI's -l (-prepend-rank) with "[0] " before every write, so also inside a row that
    // nccl-tests prints in several printf calls ("... -1[0]    1626.5 ...").
    std::string line = raw.substr(log_match::mpi_prefix(raw));
    if (const size_t n = log_match::srun_label(line)) {
      line = line.substr(n);
    } else if (const auto tag = log_match::bracket_rank(line)) {
      std::string kept;
      for (size_t p = 0, q; p < line.size(); p = q + tag->size()) {
        q = line.find(*tag, p);
        if (q == std::string::npos) q = line.size();
        kept.append(line, p, q - p);
      }
      line = kept;
    }
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (log_match::debug_tag(t)) {  // NCCL_DEBUG output interleaved with the table
      read_version(t);
      // "NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.7.4-aws" (nccl_ofi_net.cpp, PACKAGE_STRING)
      if (const auto m = log_match::ofi_version(t); m && log.net_plugin_version == 0)
        log.net_plugin_version = aws_ofi_version_code((*m)[0] + "." + (*m)[1] + "." + (*m)[2]);
      continue;
    }
    // NCCL_DEBUG=VERSION or WARN: init.cc showVersion() writes "NCCL version 2.18.3+cuda12.2" bare
    // (debug.cc ncclDebugLog adds the host/pid/rank prefix only below the VERSION level).
    if (t.rfind("NCCL version ", 0) == 0) {
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
        blocking = 0;
        // nccl-tests -a N ("agg iters: N"): N calls per ncclGroupStart/End, timed per call.
        log.agg_iters = 0;
        if (const size_t a = t.find("agg iters:"); a != std::string::npos) {
          std::istringstream as(t.substr(a + 10));
          long long v = 0;
          if (as >> v && v >= 1 && v <= (1 << 20)) log.agg_iters = static_cast<int>(v);
        }
        // nccl-tests -G N (CUDA graph launches; printed as "graph: N" on the same banner line
        // since -G exists): absent from older banners, which then leave it unstated (-1).
        log.cuda_graph = -1;
        if (const auto g = log_match::cuda_graph(t))
          if (!banner_int(*g, 1 << 20, log.cuda_graph))
            throw NcclLogError(filename, lineno, t.substr(0, 120),
                               "'graph: N' (nccl-tests -G, CUDA graph launches) with N an integer in [0, 1048576]");
      } else if (const auto h = column_header(t)) {
        // The column header comes after the banner; a header of its own starts a run (which
        // inherits the banner only if one came since the last row).
        host_time = *h;
        header_since_row = true;
      } else if (t.find("Blocking Enabled:") != std::string::npos) {
        // common.cu: -z 1 "wait and barrier after each inner iteration", 2 "wait after each
        // inner iteration ..., no barrier", 3 "... after each outer iteration".
        blocking = t.find("outer iteration") != std::string::npos ? 3
                   : t.find("no barrier") != std::string::npos    ? 2
                                                                  : 1;
      } else if (auto dev = log_match::device(t)) {
        log.device_hosts.push_back((*dev)[0]);
        log.devices.push_back((*dev)[1]);
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
    NcclTestsRow r;
    // nccl-tests -S 1 ends a row with "YYYY-MM-DD HH:MM:SS" (util.cu writeTimestamp).
    if (f.size() >= 2 && is_date(f[f.size() - 2]) && is_clock(f.back())) {
      r.timestamp = f[f.size() - 2] + " " + f.back();
      f.resize(f.size() - 2);
    }
    // Layouts by field count: 13 = with root, 12 = with redop, or with root and no redop (the
    // rooted tests of nccl-tests before every test printed both: "size count type root ..."), 11 =
    // oldest (no redop); 21 = with root and nccl-tests -I 1's four per-iteration columns after
    // each block.
    int head = 0;  // fields before the out-of-place time
    bool root_no_redop = false;
    long long root = -1;
    if (f.size() == 13 || f.size() == 21)
      head = 5;
    else if (f.size() == 12) {
      head = 4;
      long long r4 = 0;
      root_no_redop = to_int(f[3], r4);
      if (root_no_redop) root = r4;
    } else if (f.size() == 11)
      head = 3;
    else
      throw NcclLogError(filename, lineno, t,
                         std::string(kExpected) + " (got " + std::to_string(f.size()) +
                             " fields; rows have 11, 12 or 13, or 21 with nccl-tests -I 1, plus 2 with -S 1)");
    r.per_iteration = f.size() == 21;
    const int block = r.per_iteration ? 8 : 4;  // fields per out-of-place / in-place block
    long long count = 0;
    double size = 0;
    auto need = [&](bool ok, const std::string& what) {
      if (!ok) throw NcclLogError(filename, lineno, t, what);
    };
    need(to_double(f[0], size) && size >= 0 && std::floor(size) == size,
         "column 1 (size, bytes) to be a non-negative integer, got \"" + f[0] + "\"");
    need(to_int(f[1], count) && count >= 0,
         "column 2 (count, elements) to be a non-negative integer, got \"" + f[1] + "\"");
    need(is_word(f[2]), "column 3 (type) to be a name like float, got \"" + f[2] + "\"");
    if (head >= 4 && !root_no_redop)
      need(is_word(f[3]),
           "column 4 (redop, or root without one) to be a name like sum or an integer, got \"" + f[3] + "\"");
    if (head == 5) need(to_int(f[4], root), "column 5 (root) to be an integer, got \"" + f[4] + "\"");
    double v[6];
    const char* names[6] = {"out-of-place time", "out-of-place algbw", "out-of-place busbw",
                            "in-place time",     "in-place algbw",     "in-place busbw"};
    const int cols[6] = {head, head + 1, head + 2, head + block, head + block + 1, head + block + 2};
    for (int i = 0; i < 6; ++i)
      need(to_double(f[cols[i]], v[i]) && (i % 3 == 0 ? v[i] > 0 : v[i] >= 0),
           "column " + std::to_string(cols[i] + 1) + " (" + names[i] + ") to be a finite number " +
               (i % 3 == 0 ? "> 0" : ">= 0") + ", got \"" + f[cols[i]] + "\"");
    need(is_wrong_field(f[head + 3]), "column " + std::to_string(head + 4) +
                                          " (out-of-place #wrong) to be a number or N/A, got \"" + f[head + 3] + "\"");
    need(is_wrong_field(f[head + block + 3]), "column " + std::to_string(head + block + 4) +
                                                  " (in-place #wrong) to be a number or N/A, got \"" +
                                                  f[head + block + 3] + "\"");
    if (r.per_iteration) {
      const char* stat_names[4] = {"i_min", "i_max", "i_p99", "i_cv%"};
      for (int b = 0; b < 2; ++b) {
        double s4[4];
        for (int k = 0; k < 4; ++k) {
          const int c = head + b * block + 4 + k;
          need(to_double(f[static_cast<size_t>(c)], s4[k]) && s4[k] >= 0,
               "column " + std::to_string(c + 1) + " (" + (b ? "in-place " : "out-of-place ") + stat_names[k] +
                   ") to be a finite number >= 0, got \"" + f[static_cast<size_t>(c)] + "\"");
        }
        (b ? r.ip_iter : r.oop_iter) = {s4[0], s4[1], s4[2], s4[3]};
      }
    }
    r.size_bytes = size;
    r.count = count;
    r.type = f[2];
    if (head >= 4 && !root_no_redop) r.redop = f[3];
    r.root = static_cast<int>(root);
    r.oop_time_us = v[0];
    r.oop_algbw = v[1];
    r.oop_busbw = v[2];
    r.oop_wrong = f[head + 3];
    r.ip_time_us = v[3];
    r.ip_algbw = v[4];
    r.ip_busbw = v[5];
    r.ip_wrong = f[static_cast<size_t>(head + block + 3)];
    // Sizes start over in a new run (-d all, -o all), also at one size each; but "-b 1" rounds its
    // first sizes to 0 elements, so several 0-byte rows open one run.
    const bool restart = size < prev_size || (size == prev_size && size > 0);
    if (log.runs.empty() || banner_since_row || header_since_row || restart) {
      NcclTestsRun run;
      run.first_row = log.rows.size();
      // A run without a banner of its own (sizes started over) does not inherit the last one,
      // unless its data type or reduction differs from the row before: nccl-tests -d all / -o all
      // runs every size once per type and operation in one process, under one banner.
      const bool same_process = !log.rows.empty() && !header_since_row &&
                                (r.type != log.rows.back().type || r.redop != log.rows.back().redop);
      const bool inherit = banner_since_row || same_process;
      run.nthread = inherit ? log.nthread : 0;
      run.ngpus = inherit ? log.ngpus : 0;
      run.cuda_graph = inherit ? log.cuda_graph : -1;
      run.host_time = host_time;
      run.blocking = blocking;
      run.agg_iters = inherit ? log.agg_iters : 0;
      log.runs.push_back(run);
    }
    banner_since_row = false;
    header_since_row = false;
    prev_size = size;
    if (host_time && !time_from_algbw(r)) ++log.runs.back().host_time_rows_dropped;
    ++log.runs.back().row_count;
    log.rows.push_back(r);
  }
  return log;
}

std::optional<std::array<int, 2>> NcclTestsLog::hosts_by_ranks() const {
  if (device_hosts.empty() || device_hosts.size() != devices.size()) return std::nullopt;
  std::map<std::string, int> per_host;
  for (const auto& h : device_hosts) {
    if (h.empty()) return std::nullopt;
    ++per_host[h];
  }
  const int each = per_host.begin()->second;
  for (const auto& [h, n] : per_host)
    if (n != each) return std::nullopt;
  return std::array<int, 2>{static_cast<int>(per_host.size()), each};
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
  // Rooted tests: broadcast_perf prints redop "none" (src/broadcast.cu BroadcastRunTest passes
  // "none" to TimeTest), reduce_perf a reduction's; without a redop column, either.
  if (best->root >= 0) return best->redop == "none" ? "broadcast_perf" : "";
  // alltoall_perf prints as all_gather_perf does ("none", (n-1)/n): only its banner tells it apart.
  if (best->redop == "none") return "all_gather_perf";
  // 2(n-1)/n >= 1, printed to two decimals; (n-1)/n < .999 up to 1,000 ranks.
  if (best->oop_busbw / best->oop_algbw >= 0.999) return "all_reduce_perf";
  return best->redop.empty() ? "" : "reduce_scatter_perf";
}

namespace {

// A number nccl-tests' jsonDouble / jsonInt / jsonSize_t wrote: finite (its "nan" is a string,
// refused here) and within [lo, hi].
double json_number(const core::Json& o, const std::string& key, const std::string& path, core::Diagnostics& d,
                   double lo, double hi, bool required = true) {
  const std::string at = core::join_path(path, key);
  if (!o.is_object() || !o.contains(key)) {
    if (required) d.add(at, "missing; nccl-tests -J writes it (a number)");
    return 0;
  }
  const auto& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi) {
    d.add_value(at, v, "a number from " + core::printf_text("%g", lo) + " to " + core::printf_text("%g", hi));
    return 0;
  }
  return v.get<double>();
}

std::string json_text(const core::Json& o, const std::string& key, const std::string& path, core::Diagnostics& d) {
  if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) {
    d.add(core::join_path(path, key), "missing or not a string; nccl-tests -J writes it");
    return "";
  }
  return o.at(key).get<std::string>();
}

}  // namespace

NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& filename) {
  const core::Json j = core::parse_json_text(text, filename);
  core::Diagnostics d(filename);
  NcclTestsLog log;
  log.filename = filename;
  if (!j.is_object()) {
    d.add("", "an nccl-tests -J file is one JSON object with \"version\", \"config\" and \"results\"");
    d.throw_if_any();
  }
  if (!j.contains("version") || j.at("version") != 3) {
    d.add("/version", (j.contains("version") ? core::short_dump(j.at("version")) : std::string("missing")) +
                          "; this reader knows JSON_FILE_VERSION 3, what nccl-tests 2.17.3 to 2.19.6 write");
    d.throw_if_any();
  }
  const double code = json_number(j, "nccl_version", "", d, 0, 999999, false);
  if (code >= 20000 && code < 30000) log.nccl_version = static_cast<int>(code);
  if (j.contains("args") && j.at("args").is_array() && !j.at("args").empty() && j.at("args")[0].is_string()) {
    // The binary it ran: "./build/all_reduce_perf" -> all_reduce_perf.
    std::string a = j.at("args")[0].get<std::string>();
    if (const size_t slash = a.find_last_of('/'); slash != std::string::npos) a = a.substr(slash + 1);
    log.test_name = a;
  }
  NcclTestsRun run;
  if (!j.contains("config") || !j.at("config").is_object()) {
    d.add("/config", "missing or not an object; nccl-tests -J writes the run's settings there");
  } else {
    const auto& c = j.at("config");
    log.nthread = static_cast<int>(json_number(c, "nthreads", "/config", d, 1, 1 << 20));
    log.ngpus = static_cast<int>(json_number(c, "ngpus", "/config", d, 1, 1024));
    log.cuda_graph = static_cast<int>(json_number(c, "graph", "/config", d, 0, 1 << 20, false));
    log.agg_iters = static_cast<int>(json_number(c, "aggregated_iterations", "/config", d, 0, 1 << 20, false));
    run.agg_iters = log.agg_iters;
    // jsonBool writes "true" / "false" as strings.
    if (c.contains("blocking_collectives") && c.at("blocking_collectives") == "true") run.blocking = 1;
    if (c.contains("devices") && c.at("devices").is_array())
      for (size_t i = 0; i < c.at("devices").size(); ++i) {
        const std::string at = "/config/devices/" + std::to_string(i);
        log.devices.push_back(json_text(c.at("devices")[i], "device_info", at, d));
        log.device_hosts.push_back(json_text(c.at("devices")[i], "hostname", at, d));
      }
  }
  run.nthread = log.nthread;
  run.ngpus = log.ngpus;
  run.cuda_graph = log.cuda_graph;
  if (!j.contains("results") || !j.at("results").is_array()) {
    d.add("/results", "missing or not an array; nccl-tests -J writes one object per size there");
    d.throw_if_any();
  }
  const auto& results = j.at("results");
  double prev = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string at = "/results/" + std::to_string(i);
    const auto& o = results[i];
    NcclTestsRow r;
    r.size_bytes = json_number(o, "size", at, d, 0, 1e18);
    r.count = static_cast<long long>(json_number(o, "count", at, d, 0, 1e18));
    r.type = json_text(o, "type", at, d);
    r.redop = json_text(o, "redop", at, d);
    const std::string root = trim(json_text(o, "root", at, d));  // "%6i" as a string
    long long rv = -1;
    if (!root.empty() && !to_int(root, rv)) d.add(at + "/root", "\"" + root + "\" is not an integer");
    r.root = static_cast<int>(rv);
    bool host = false;
    for (int b = 0; b < 2; ++b) {
      const std::string key = b ? "in_place" : "out_of_place";
      const std::string bp = at + "/" + key;
      if (!o.is_object() || !o.contains(key) || !o.at(key).is_object()) {
        d.add(bp, "missing or not an object {time, alg_bw, bus_bw, nwrong}");
        continue;
      }
      const auto& blk = o.at(key);
      const bool cpu = blk.contains("cpu_time");
      host = host || cpu;
      const double time = json_number(blk, cpu ? "cpu_time" : "time", bp, d, 0, 1e18);
      const double alg = json_number(blk, "alg_bw", bp, d, 0, 1e18), bus = json_number(blk, "bus_bw", bp, d, 0, 1e18);
      if (d.ok() && !(time > 0)) d.add(bp + (cpu ? "/cpu_time" : "/time"), "0; a time must be > 0");
      const std::string wrong = blk.contains("nwrong") && blk.at("nwrong").is_number()
                                    ? core::printf_text("%g", blk.at("nwrong").get<double>())
                                    : "N/A";
      (b ? r.ip_time_us : r.oop_time_us) = time;
      (b ? r.ip_algbw : r.oop_algbw) = alg;
      (b ? r.ip_busbw : r.oop_busbw) = bus;
      (b ? r.ip_wrong : r.oop_wrong) = wrong;
      const std::string pk = key + "_per_iter";
      if (o.contains(pk) && o.at(pk).is_object()) {
        const auto& p = o.at(pk);
        r.per_iteration = true;
        (b ? r.ip_iter : r.oop_iter) = {
            json_number(p, "min_us", at + "/" + pk, d, 0, 1e18), json_number(p, "max_us", at + "/" + pk, d, 0, 1e18),
            json_number(p, "p99_us", at + "/" + pk, d, 0, 1e18), json_number(p, "cv_pct", at + "/" + pk, d, 0, 1e18)};
      }
    }
    if (!d.ok()) continue;
    if (i == 0) run.host_time = host;
    if (host != run.host_time) d.add(at, "mixes \"time\" and \"cpu_time\" with the rows before it");
    // One file is one run; sizes that start over (nccl-tests -N repeats) start another, as in the text.
    if (log.runs.empty() || r.size_bytes <= prev) {
      NcclTestsRun next = run;
      next.first_row = log.rows.size();
      next.row_count = 0;
      next.host_time_rows_dropped = 0;
      log.runs.push_back(next);
    }
    prev = r.size_bytes;
    if (run.host_time && !time_from_algbw(r)) ++log.runs.back().host_time_rows_dropped;
    ++log.runs.back().row_count;
    log.rows.push_back(r);
  }
  d.throw_if_any();
  return log;
}

std::vector<std::string> log_warnings(const NcclTestsLog& log) {
  std::vector<std::string> out;
  for (size_t i = 0; i < log.runs.size(); ++i) {
    const auto& run = log.runs[i];
    const std::string which = log.runs.size() > 1 ? "run " + std::to_string(i + 1) + ": " : "";
    if (run.host_time)
      out.push_back(log.filename + ": " + which +
                    "the time columns are the host's enqueue time per call (nccl-tests -C 1, \"cputime\"); each "
                    "collective time is taken as size / algbw instead" +
                    (run.host_time_rows_dropped
                         ? ", and " + std::to_string(run.host_time_rows_dropped) +
                               " row(s) with algbw below 1 GB/s (too few printed digits) are left out"
                         : std::string()));
    if (run.agg_iters > 1)
      out.push_back(log.filename + ": " + which + "measured with " + std::to_string(run.agg_iters) +
                    " calls per group (nccl-tests -a " + std::to_string(run.agg_iters) +
                    "): NCCL launches a group's calls together, so small sizes measure below one call's "
                    "latency, which is what the prediction (and DDP, one call per bucket) has");
    if (run.blocking)
      out.push_back(log.filename + ": " + which + "measured with blocking calls (nccl-tests -z " +
                    std::to_string(run.blocking) +
                    "): every call or iteration waits for the GPU, so small sizes include a host synchronization "
                    "that back-to-back calls (the prediction, and DDP) do not pay");
  }
  return out;
}

NcclTestsLog parse_nccl_tests_log_file(const std::string& path) {
  const std::string text = core::read_text_file(path);  // regular files only, size-limited
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_nccl_tests_json(text, path);
  std::istringstream in(text);
  return parse_nccl_tests_log(in, path);
}

}  // namespace ddpsim::collectives
