#include "collectives/nccl_tests_log.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
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

NcclLogError::NcclLogError(const std::string& file, int line, const std::string& text, const std::string& expected)
    : std::runtime_error(file + ":" + std::to_string(line) + ": cannot parse \"" + text + "\": expected " + expected),
      file_(file),
      line_(line) {}

NcclTestsLog parse_nccl_tests_log(std::istream& in, const std::string& filename) {
  NcclTestsLog log;
  log.filename = filename;
  static const std::regex kMpiPrefix(R"(^\[\d+,\d+\]<(stdout|stderr)>:)");
  static const std::regex kThreads(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex kDevice(
      R"(^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s+(.*?)\s*$)");
  static const std::regex kAvg(R"(^#\s*Avg bus bandwidth\s*:\s*(\S+))");
  static const std::regex kVersion(R"(NCCL version\s+(\d+)\.(\d+)\.(\d+))");
  static const std::regex kTestName(R"(Collective test starting:\s*(\S+))");
  static const std::regex kDebug(R"(\bNCCL (INFO|WARN|TRACE)\b)");
  std::string raw;
  int lineno = 0;
  bool banner_since_row = true;
  double prev_size = -1;
  // nccl-tests 2.14+ banner: "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102"
  // (NCCL_VERSION_CODE of the library it ran with: 2.31.2 here).
  // Before 2.9 NCCL_VERSION_CODE was major*1000 + minor*100 + patch (2.8.3 = 2803).
  static const std::regex kLibraryCode(R"(nccl-library=(\d{4,6})\b)");
  auto read_version = [&](const std::string& t) {
    std::smatch m;
    if (log.nccl_version != 0) return;
    if (std::regex_search(t, m, kVersion)) {
      int major = 0, minor = 0, patch = 0;
      if (!banner_int(m[1], 99, major) || !banner_int(m[2], 99, minor) || !banner_int(m[3], 99, patch))
        throw NcclLogError(filename, lineno, t.substr(0, 120),
                           "'NCCL version MAJOR.MINOR.PATCH' with each part an integer in [0, 99]");
      log.nccl_version = major * 10000 + minor * 100 + patch;
    } else if (std::regex_search(t, m, kLibraryCode)) {
      int code = 0;
      if (!banner_int(m[1], 999999, code)) return;
      if (code >= 20000 && code < 30000) log.nccl_version = code;
      if (code >= 2000 && code < 3000) log.nccl_version = 20000 + code / 100 % 10 * 100 + code % 100;
    }
  };
  while (std::getline(in, raw)) {
    ++lineno;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    // mpirun --tag-output prefixes every line with "[1,0]<stdout>:".
    std::string line = std::regex_replace(raw, kMpiPrefix, "", std::regex_constants::format_first_only);
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (std::regex_search(t, kDebug)) {  // NCCL_DEBUG output interleaved with the table
      read_version(t);
      continue;
    }
    if (t[0] == '#') {
      read_version(t);
      std::smatch m;
      if (log.test_name.empty() && std::regex_search(t, m, kTestName)) log.test_name = m[1];
      if (std::regex_search(t, m, kThreads)) {
        if (!banner_int(m[1], 1 << 20, log.nthread) || !banner_int(m[2], 1024, log.ngpus))
          throw NcclLogError(filename, lineno, t.substr(0, 120),
                             "'nThread N nGpus G' with N an integer in [0, 1048576] and G in [0, 1024]");
        banner_since_row = true;
      } else if (std::regex_search(t, m, kDevice)) {
        log.devices.push_back(m[1]);
      } else if (std::regex_search(t, m, kAvg)) {
        double v;
        if (!to_double(m[1], v)) throw NcclLogError(filename, lineno, t, "a number after '# Avg bus bandwidth :'");
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
      log.runs.push_back(run);
    }
    banner_since_row = false;
    prev_size = size;
    ++log.runs.back().row_count;
    log.rows.push_back(r);
  }
  return log;
}

int NcclTestsLog::nranks_from_bandwidths() const {
  const NcclTestsRow* best = nullptr;
  for (const auto& r : rows)
    if (r.oop_algbw >= 1.0 && (!best || r.oop_algbw > best->oop_algbw)) best = &r;
  if (!best) return 0;
  const double ratio = best->oop_busbw / best->oop_algbw;  // 2(n-1)/n, in [1, 2)
  if (!(ratio >= 0.99) || !(ratio < 2.0)) return 0;
  const double n = 2.0 / (2.0 - ratio);
  const long rounded = std::lround(n);
  // Two printed decimals on algbw >= 1: the ratio is good to ~1 %, so n to ~1 % of n^2/2.
  if (rounded < 2 || std::abs(n - rounded) > 0.02 * rounded * rounded / 2 + 0.05) return 0;
  return static_cast<int>(rounded);
}

NcclTestsLog parse_nccl_tests_log_file(const std::string& path) {
  std::istringstream in(core::read_text_file(path));  // regular files only, size-limited
  return parse_nccl_tests_log(in, path);
}

}  // namespace ddpsim::collectives
