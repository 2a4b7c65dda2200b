#include "app/sweep.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "compare/compare.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "report/csv.hpp"
#include "report/tables.hpp"
#include "report/writers.hpp"

namespace ddpsim::app {
namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string text;
  Clock::time_point started;
};

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

// Installs the stop handlers for the lifetime of one run_children call (no SA_RESTART, so that
// poll returns at once) and puts the previous ones back.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

ChildResult decode(const std::string& text, int status) {
  ChildResult out;
  try {
    auto j = core::Json::parse(text);
    out.ok = j.value("ok", false);
    if (out.ok)
      out.value = j["value"];
    else {
      out.error = j.value("error", "unknown error");
      out.exit_code = j.value("code", 1);
    }
  } catch (const std::exception&) {
    out.ok = false;
    if (WIFSIGNALED(status)) {
      out.exit_code = 128 + WTERMSIG(status);
      out.error = "child process killed by signal " + std::to_string(WTERMSIG(status));
    } else {
      out.exit_code = WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
      out.error = "child process exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
    }
  }
  return out;
}

}  // namespace

std::string duration_text(double s) {
  char b[32];
  if (s < 10)
    std::snprintf(b, sizeof b, "%.2f s", s);
  else if (s < 60)
    std::snprintf(b, sizeof b, "%.1f s", s);
  else if (s < 3600)
    std::snprintf(b, sizeof b, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(b, sizeof b, "%dh%02dm", static_cast<int>(s) / 3600, (static_cast<int>(s) % 3600) / 60);
  return b;
}

Progress::Progress(std::string name, bool quiet, size_t total, size_t already_done)
    : name_(std::move(name)),
      quiet_(quiet),
      tty_(::isatty(STDERR_FILENO) == 1),
      total_(total),
      done_(already_done),
      start_(Clock::now()) {}

void Progress::started(const std::string& what) {
  if (quiet_) return;
  std::fprintf(stderr, "%s: %s\n", name_.c_str(), what.c_str());
  std::fflush(stderr);
}

void Progress::point_done(bool ok, const std::string& label, double wall_s) {
  ++done_;
  ++done_now_;
  if (!ok) ++failed_;
  if (quiet_) return;
  if (tty_) {
    if (!ok) std::fprintf(stderr, "\r\033[K%s: FAILED %s\n", name_.c_str(), label.c_str());
    status("");
  } else {
    status((ok ? "finished " : "FAILED ") + label + " in " + duration_text(wall_s));
  }
}

void Progress::tick() {
  if (!quiet_ && tty_) status("");
}

void Progress::close() {
  if (!quiet_ && tty_ && drawn_) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

void Progress::status(const std::string& event) {
  if (quiet_) return;
  double el = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string eta = "?";
  if (done_now_ > 0) eta = duration_text(el / static_cast<double>(done_now_) * static_cast<double>(total_ - done_));
  if (done_ == total_) eta = "0 s";
  char b[256];
  std::snprintf(b, sizeof b, "%s: %zu/%zu done, %zu failed, %s elapsed, ETA %s", name_.c_str(), done_, total_, failed_,
                duration_text(el).c_str(), eta.c_str());
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", b);
    drawn_ = true;
  } else {
    std::fprintf(stderr, "%s%s%s\n", b, event.empty() ? "" : ": ", event.c_str());
  }
  std::fflush(stderr);
}

int run_children(const std::vector<std::function<core::Json()>>& work, int jobs, const ChildEvents& events,
                 const std::vector<size_t>* order_in) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<size_t> order;
  if (order_in)
    order = *order_in;
  else
    for (size_t i = 0; i < work.size(); ++i) order.push_back(i);
  StopSignals stop_signals;
  std::vector<Running> running;
  size_t next = 0;
  auto start_one = [&](size_t i) {
    int fds[2];
    if (::pipe(fds) != 0) throw core::SimulationError(std::string("pipe failed: ") + std::strerror(errno));
    pid_t pid = ::fork();
    if (pid < 0) throw core::SimulationError(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      // The child dies of these signals as any process does; the parent collects what it left.
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      ::close(fds[0]);
      int code = 0;
      std::string payload;
      try {
        payload = core::Json{{"ok", true}, {"value", work[i]()}}.dump();
      } catch (const core::ConfigError& e) {
        payload = core::Json{{"ok", false}, {"error", e.what()}, {"code", 2}}.dump();
        code = 2;
      } catch (const std::exception& e) {
        payload = core::Json{{"ok", false}, {"error", e.what()}, {"code", 1}}.dump();
        code = 1;
      }
      write_all(fds[1], payload);
      ::close(fds[1]);
      ::_exit(code);
    }
    ::close(fds[1]);
    spdlog::debug("child process {} started for configuration {} of {}", pid, i + 1, work.size());
    running.push_back({pid, fds[0], i, {}, Clock::now()});
    if (events.on_start) events.on_start(i);
  };
  auto last_tick = Clock::now();
  const int tick_ms = std::max(1, static_cast<int>(events.tick_s * 1000));
  while (next < order.size() || !running.empty()) {
    while (g_stop_signal == 0 && next < order.size() && static_cast<int>(running.size()) < jobs)
      start_one(order[next++]);
    if (g_stop_signal != 0) {
      for (auto& r : running) ::kill(r.pid, SIGTERM);
      for (auto& r : running) {
        wait_child(r.pid);
        ::close(r.fd);
        spdlog::debug("child process {} (configuration {}) stopped", r.pid, r.index + 1);
      }
      return g_stop_signal;
    }
    std::vector<pollfd> fds;
    for (const auto& r : running) fds.push_back({r.fd, POLLIN, 0});
    int wait_ms = std::min(tick_ms, 200);  // short, so that a signal is seen soon after it lands
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) throw core::SimulationError(std::string("poll failed: ") + std::strerror(errno));
    std::vector<size_t> ended;
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = ::read(fds[k].fd, buf, sizeof buf);
      if (got > 0)
        running[k].text.append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR)
        ended.push_back(k);
    }
    // Collect in completion order; erase from the back so indices stay valid.
    for (auto it = ended.rbegin(); it != ended.rend(); ++it) {
      Running r = std::move(running[*it]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(*it));
      ::close(r.fd);
      int status = wait_child(r.pid);
      spdlog::debug("child process {} (configuration {}) ended with status {}", r.pid, r.index + 1, status);
      ChildResult res = decode(r.text, status);
      res.wall_s = std::chrono::duration<double>(Clock::now() - r.started).count();
      if (events.on_done) events.on_done(r.index, std::move(res));
    }
    if (events.on_tick && Clock::now() - last_tick >= std::chrono::milliseconds(tick_ms)) {
      last_tick = Clock::now();
      events.on_tick();
    }
  }
  return 0;
}

std::vector<ChildResult> run_in_children(const std::vector<std::function<core::Json()>>& work, int jobs) {
  std::vector<ChildResult> results(work.size());
  ChildEvents ev;
  ev.on_done = [&](size_t i, ChildResult r) { results[i] = std::move(r); };
  int sig = run_children(work, jobs, ev);
  if (sig != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  return results;
}

SweepParam parse_sweep_param(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    throw core::ConfigError("--param " + text +
                            ": expected PATH=V1,V2,... or PATH=[JSON values], e.g. ddp.bucket_cap_mb=1,5,25");
  SweepParam p;
  p.path = text.substr(0, eq);
  std::string list = text.substr(eq + 1);
  if (list.front() == '[') {
    // A JSON list: values may hold commas. Each element goes to --set as JSON text, so a string
    // stays a string ("5" as "\"5\"").
    core::Json arr;
    try {
      arr = core::Json::parse(list);
    } catch (const core::Json::parse_error& e) {
      throw core::ConfigError("--param " + text + ": not a JSON list (" + e.what() + ")");
    }
    if (!arr.is_array() || arr.empty())
      throw core::ConfigError("--param " + text + ": expected a non-empty JSON list of values");
    for (const auto& v : arr) p.values.push_back(v.dump());
  } else {
    for (auto& v : core::split_list(list)) {
      if (v.empty()) throw core::ConfigError("--param " + text + ": empty value in the list");
      p.values.push_back(std::move(v));
    }
  }
  std::set<std::string> seen;
  for (const auto& v : p.values)
    if (!seen.insert(config::parse_override_value(v).dump()).second)
      throw core::ConfigError("--param " + text + ": " + v + " is listed twice");
  return p;
}

std::vector<std::vector<std::pair<std::string, std::string>>> sweep_grid(const std::vector<SweepParam>& params) {
  std::vector<std::vector<std::pair<std::string, std::string>>> grid{{}};
  for (const auto& p : params) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& row : grid)
      for (const auto& v : p.values) {
        auto r = row;
        r.emplace_back(p.path, v);
        next.push_back(std::move(r));
      }
    grid = std::move(next);
  }
  return grid;
}

Shard parse_shard(const std::string& text) {
  auto slash = text.find('/');
  auto bad = [&] { return core::ConfigError("--shard " + text + ": expected K/N with 1 <= K <= N, e.g. 2/8"); };
  if (slash == std::string::npos) throw bad();
  Shard s;
  try {
    size_t a = 0, b = 0;
    s.k = std::stoi(text.substr(0, slash), &a);
    s.n = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (s.n < 1 || s.k < 1 || s.k > s.n) throw bad();
  return s;
}

std::vector<size_t> shard_points(size_t points, Shard shard) {
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(shard.k - 1); i < points; i += static_cast<size_t>(shard.n)) out.push_back(i);
  return out;
}

core::Json SweepHeader::to_json() const {
  core::Json j{{"ddpsim_sweep", 1}, {"scenario", scenario}, {"set", overrides}, {"params", params}, {"points", points}};
  if (!shard.whole()) j["shard"] = std::to_string(shard.k) + "/" + std::to_string(shard.n);
  return j;
}

SweepHeader SweepHeader::from_json(const core::Json& j, const std::string& origin) {
  if (!j.is_object() || j.value("ddpsim_sweep", 0) != 1 || !j.contains("scenario") || !j.contains("params") ||
      !j.contains("points") || !j.contains("set"))
    throw core::ConfigError(origin + ": line 1: not a ddpsim sweep header ({\"ddpsim_sweep\": 1, ...})");
  SweepHeader h;
  try {
    h.scenario = j["scenario"].get<std::string>();
    h.overrides = j["set"].get<std::vector<std::string>>();
    h.params = j["params"].get<std::vector<std::string>>();
    h.points = j["points"].get<size_t>();
    if (j.contains("shard")) h.shard = parse_shard(j["shard"].get<std::string>());
  } catch (const core::Json::exception& e) {
    throw core::ConfigError(origin + ": line 1: malformed sweep header: " + e.what());
  }
  return h;
}

bool SweepHeader::same_sweep(const SweepHeader& o) const {
  return scenario == o.scenario && overrides == o.overrides && params == o.params && points == o.points;
}

SweepJournal read_journal(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::ConfigError(path + ": cannot read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  SweepJournal j;
  std::vector<std::string> lines;
  size_t pos = 0;
  bool last_complete = true;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(all.substr(pos));
      last_complete = false;
      break;
    }
    lines.push_back(all.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (lines.empty()) throw core::ConfigError(path + ": empty; expected a sweep header line");
  core::Json head;
  try {
    head = core::Json::parse(lines[0]);
  } catch (const core::Json::parse_error&) {
    throw core::ConfigError(path + ": line 1: not JSON; expected a ddpsim sweep header");
  }
  j.header = SweepHeader::from_json(head, path);
  std::vector<std::string> problems;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string where = path + ": line " + std::to_string(i + 1);
    core::Json row;
    try {
      row = core::Json::parse(lines[i]);
    } catch (const core::Json::parse_error&) {
      // A kill can cut the last line short (rows are written one write() each); anything else is damage.
      if (i + 1 == lines.size() && !last_complete) {
        ++j.dropped_partial_lines;
        continue;
      }
      problems.push_back(where + ": not JSON");
      continue;
    }
    if (!row.is_object() || !row.contains("point") || !row["point"].is_number_unsigned() || !row.contains("params")) {
      problems.push_back(where + ": not a sweep row ({\"point\": N, \"params\": {...}, ...})");
      continue;
    }
    size_t point = row["point"].get<size_t>();
    if (point >= j.header.points) {
      problems.push_back(where + ": point " + std::to_string(point) + " is outside the sweep's " +
                         std::to_string(j.header.points) + " points");
      continue;
    }
    if (j.rows.count(point)) {
      problems.push_back(where + ": point " + std::to_string(point) + " appears twice");
      continue;
    }
    j.rows.emplace(point, std::move(row));
  }
  if (!problems.empty()) throw core::ConfigError(problems);
  return j;
}

std::string journal_text(const SweepHeader& header, const std::map<size_t, core::Json>& rows) {
  std::string out = header.to_json().dump() + "\n";
  for (const auto& [point, row] : rows) out += row.dump() + "\n";
  return out;
}

std::string group_path(const SweepHeader& header, const SweepDecide& decide) {
  const auto& ps = header.params;
  if (decide.group_by == "none") return "";
  if (decide.group_by.empty()) return std::find(ps.begin(), ps.end(), "nodes") != ps.end() ? "nodes" : "";
  if (std::find(ps.begin(), ps.end(), decide.group_by) == ps.end())
    throw core::ConfigError("--group-by " + decide.group_by + ": not a swept parameter; expected one of " +
                            core::Json(ps).dump() + " or none");
  return decide.group_by;
}

double parse_tolerance(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  while (!t.empty() && t.back() == ' ') t.pop_back();
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(t, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (t.empty() || used != t.size() || !(v >= 0 && v < 100))
    throw core::ConfigError("--tolerance " + text +
                            ": expected a percentage >= 0 and < 100, e.g. 1 or 1% (differences within it are flat)");
  return v / 100.0;
}

SweepDecide parse_decide(const std::string& metric, const std::string& group_by, const std::string& tolerance) {
  SweepDecide d;
  d.metric = compare::parse_metric(metric);
  d.group_by = group_by;
  if (!tolerance.empty()) d.tolerance = parse_tolerance(tolerance);
  return d;
}

std::string sweep_csv_lines(const std::vector<std::string>& params, const core::Json& rows,
                            const std::vector<bool>& best) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string one = report::sweep_csv(params, core::Json::array({rows[i]}),
                                              i < best.size() && best[i] ? std::optional<size_t>(0) : std::nullopt);
    out += one.substr(one.find('\n') + 1);
  }
  return out;
}

namespace {

std::string row_label(const core::Json& r, const std::vector<std::string>& params) {
  std::string s;
  for (const auto& p : params)
    s += (s.empty() ? "" : ", ") + p + "=" + report::param_text(r["params"].value(p, core::Json()));
  return s;
}

// The sweep's table: one column per swept parameter (its last path component unless two read the
// same), GPUs when they vary, the metric when it is not the step time, then step time, exposed
// comm, overlap and buckets; each row's mark says what the decision made of it.
std::string sweep_table_text(const std::string& scenario, const std::vector<std::string>& params,
                             const core::Json& rows, compare::Metric metric, const std::string& group,
                             const std::vector<std::string>& marks) {
  std::vector<std::string> head;
  for (const auto& p : params) head.push_back(p.substr(p.rfind('.') == std::string::npos ? 0 : p.rfind('.') + 1));
  for (size_t i = 0; i < head.size(); ++i)
    for (size_t k = 0; k < head.size(); ++k)
      if (i != k &&
          head[i] == params[k].substr(params[k].rfind('.') == std::string::npos ? 0 : params[k].rfind('.') + 1))
        head[i] = params[i];
  bool sizes_vary = false;
  for (const auto& r : rows)
    if (r.contains("world_size") && rows[0].contains("world_size") && r["world_size"] != rows[0]["world_size"])
      sizes_vary = true;
  if (sizes_vary) head.push_back("GPUs");
  if (metric == compare::Metric::SAMPLES_PER_S) head.push_back("samples/s");
  if (metric == compare::Metric::COST) head.push_back("$/M samples");
  // Memory per GPU where the configurations differ in it by more than 1 % (FSDP's resharding,
  // checkpointing, batch size: what a faster configuration costs).
  double mem_lo = 0, mem_hi = 0;
  for (const auto& r : rows)
    if (!r.contains("error") && r.contains("memory_per_gpu_bytes") && r["memory_per_gpu_bytes"].is_number()) {
      const double m = r["memory_per_gpu_bytes"].get<double>();
      mem_lo = mem_lo > 0 ? std::min(mem_lo, m) : m;
      mem_hi = std::max(mem_hi, m);
    }
  const bool memory_varies = mem_lo > 0 && mem_hi > 1.01 * mem_lo;
  for (const char* h : {"step time", "exposed comm", "overlap", "buckets"}) head.push_back(h);
  if (memory_varies) head.push_back("memory/GPU");
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> tails;
  size_t failed = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::vector<std::string> c;
    for (const auto& p : params) c.push_back(report::param_text(r["params"].value(p, core::Json())));
    if (r.contains("error")) {
      ++failed;
      while (c.size() < head.size()) c.push_back("-");
      std::string msg = r["error"].get<std::string>();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl) + " ...";
      tails.push_back("   FAILED (exit " + std::to_string(r.value("exit_code", 1)) + "): " + msg);
    } else {
      if (sizes_vary) c.push_back(std::to_string(r["world_size"].get<long long>()));
      if (metric != compare::Metric::STEP_TIME) {
        const auto& v = r[compare::metric_key(metric)];
        char b[64];
        std::snprintf(b, sizeof b, metric == compare::Metric::COST ? "%.2f" : "%.1f",
                      v.is_number() ? v.get<double>() : 0.0);
        c.push_back(v.is_number() ? b : "-");
      }
      c.push_back(core::format_time(r["step_time_s"].get<double>()));
      c.push_back(core::format_time(r.value("exposed_comm_s", 0.0)));
      c.push_back(r["overlap_ratio"].is_null() ? "n/a" : core::percent1_text(r["overlap_ratio"].get<double>()));
      // Buckets are DDP's; FSDP communicates per unit.
      c.push_back(report::is_fsdp_row(r) ? "-" : std::to_string(r["num_buckets"].get<long long>()));
      if (memory_varies)
        c.push_back(r.contains("memory_per_gpu_bytes") && r["memory_per_gpu_bytes"].is_number()
                        ? core::format_bytes(r["memory_per_gpu_bytes"].get<double>())
                        : "-");
      tails.push_back(marks[i]);
    }
    cells.push_back(std::move(c));
  }
  std::ostringstream o;
  o << "sweep of " << scenario << " (" << rows.size() << " configurations";
  if (failed) o << ", " << failed << " failed";
  // "compared by", not "best =": when every row is within the tolerance there is no best (the rows
  // stay in the order of the points).
  o << "; compared by " << compare::metric_words(metric) << (group.empty() ? "" : " per " + group) << ")\n";
  o << core::aligned_columns(head, cells, tails, false);
  return o.str();
}

using compare::does_not_fit;

// Why rows are left out of the ranking: "3 configuration(s) do not fit ...", with what the first
// of them needs and what would make it fit (compare::memory_note, as compare's note says it).
std::string unfit_text(const core::Json& rows, size_t unfit, bool none_fits, const std::vector<std::string>& params) {
  std::string t = none_fits
                      ? "none of the configurations fits its GPU's memory: ranked anyway"
                      : std::to_string(unfit) + " configuration(s) do not fit their GPU's memory: excluded from best";
  for (const auto& r : rows)
    if (!r.contains("error") && does_not_fit(r))
      return t + " (" + row_label(r, params) + " " + compare::memory_note(r) + ")\n";
  return t + "\n";
}

// Parameters that change the work in a step: ranked by step time, the least work wins.
std::string work_note(const std::vector<std::string>& params, compare::Metric metric) {
  if (metric != compare::Metric::STEP_TIME) return "";
  std::string w;
  for (const auto& p : params)
    if (p == "training.batch_size" || p == "training.seq_len" || p == "training.gradient_accumulation_steps" ||
        p == "model")
      w += (w.empty() ? "" : ", ") + p;
  if (w.empty()) return "";
  return "note: " + w + " change" + (w.find(',') == std::string::npos ? "s" : "") +
         " the work in a step, so the least step time is the least work; --metric samples_per_s ranks by "
         "throughput\n";
}

// Sweeping ddp.bucket_cap_mb with numbers only: in PyTorch 2.x an explicit cap is also the first
// bucket's (distributed.py: bucket_bytes_cap_default is False unless bucket_cap_mb is None), so no
// row is the default, whose first bucket is 1 MiB. Says so unless null (None) is among the values.
std::string bucket_cap_note(const std::vector<std::string>& params, const core::Json& rows) {
  const std::string key = "ddp.bucket_cap_mb";
  if (std::find(params.begin(), params.end(), key) == params.end()) return "";
  bool ddp = false;
  for (const auto& r : rows) {
    if (r.contains("error") || !r.contains("params")) continue;
    if (r["params"].value(key, core::Json()).is_null()) return "";
    // DistributedDataParallel: DataParallel and FSDP rows carry comm_hook "none".
    ddp = ddp || r.value("comm_hook", std::string("none")) != "none";
  }
  if (!ddp) return "";
  return "note: an explicit bucket_cap_mb also caps the first bucket in PyTorch 2.x (left unset, it is 1 MiB): no row "
         "is DDP's default; add null to the values to run it (ddp.pytorch_version 1.13 keeps 1 MiB for every cap)\n";
}
}  // namespace

std::string finish_sweep(const SweepHeader& header, const std::map<size_t, core::Json>& rows,
                         const SweepOutputs& outputs, const SweepDecide& sd, core::Json* doc_out) {
  core::Json arr = core::Json::array();
  size_t failed = 0;
  for (const auto& [point, row] : rows) {
    if (row.contains("error")) ++failed;
    arr.push_back(row);
  }
  const std::string group = group_path(header, sd);
  compare::DecideOptions dopt;
  dopt.metric = sd.metric;
  dopt.tolerance = sd.tolerance;
  const auto group_of = [&](const core::Json& r) {
    return group.empty() ? core::Json::object() : core::Json{{group, r["params"].value(group, core::Json())}};
  };
  // As compare: a configuration that does not fit its GPU's memory is not the best while another
  // fits; when none fits (a setting swept on a job too large as it stands, e.g. bucket caps) they
  // are ranked anyway, and the text says so.
  auto decisions = compare::decide(arr, dopt, group_of,
                                   [](const core::Json& r) { return !r.contains("error") && !does_not_fit(r); });
  bool ranked_unfit = false;
  if (decisions.empty()) {
    decisions = compare::decide(arr, dopt, group_of, [](const core::Json& r) { return !r.contains("error"); });
    ranked_unfit = !decisions.empty();
  }
  // The rows that are not the group's own variable: the label of a row within its group.
  std::vector<std::string> inner;
  for (const auto& p : header.params)
    if (p != group) inner.push_back(p);
  if (inner.empty()) inner = header.params;
  std::vector<std::string> marks(arr.size());
  std::vector<bool> best_mark(arr.size(), false);
  size_t unfit = 0;
  for (size_t i = 0; i < arr.size(); ++i)
    if (!arr[i].contains("error") && does_not_fit(arr[i])) {
      marks[i] = ranked_unfit ? "   (does not fit)" : "   (does not fit: excluded from best)";
      ++unfit;
    }
  core::Json groups = core::Json::array();
  std::string why;
  for (const auto& d : decisions) {
    const std::string gname = group.empty() ? "" : group + "=" + report::param_text(d.key[group]);
    core::Json g{{"group", d.key},
                 {"metric", compare::metric_name(sd.metric)},
                 {"tolerance", d.tolerance},
                 {"tolerance_source", d.tolerance_source},
                 {"candidates", d.members.size()}};
    // The rows the recommendation explains: the group's, less the flat rows other than the reference.
    core::Json sub = core::Json::array();
    std::optional<size_t> sub_best;
    for (size_t i : d.members) {
      if (d.is_flat() && i != *d.best && std::find(d.flat.begin(), d.flat.end(), i) != d.flat.end()) continue;
      if (i == *d.best) sub_best = sub.size();
      sub.push_back(arr[i]);
    }
    core::Json rec = report::sweep_recommendation(header.params, sub, sub_best);
    std::string head = gname.empty() ? "" : gname + ": ";
    if (d.is_flat()) {
      const std::string ft =
          compare::flat_text(arr, d, sd.metric, [&](const core::Json& r) { return row_label(r, inner); });
      core::Json pts = core::Json::array();
      for (size_t i : d.flat) {
        pts.push_back(arr[i]["point"]);
        marks[i] = "   ~ flat" + (gname.empty() ? "" : " (" + gname + ")");
      }
      g["best"] = nullptr;
      g["flat"] = pts;
      g["text"] = ft;
      why += head + ft + "; no single best: the difference is below the model's resolution\n";
      if (d.members.size() > d.flat.size()) {
        why += "  the others, against " + row_label(arr[*d.best], inner) + ":\n";
        for (const auto& l : rec["losers"]) why += "    " + l["text"].get<std::string>() + "\n";
      }
    } else {
      best_mark[*d.best] = true;
      marks[*d.best] = "   <- best" + (gname.empty() ? "" : " (" + gname + ")");
      g["best"] = arr[*d.best];
      g["flat"] = core::Json::array();
      g["text"] = "best: " + row_label(arr[*d.best], inner);
      if (d.members.size() > 1)
        why += head + "why " + row_label(arr[*d.best], inner) + " wins: ";
      else
        why += head + "only " + row_label(arr[*d.best], inner) + " ran: ";
      std::string rt = report::recommendation_text(rec);
      const std::string pre = "why the best wins: ";
      if (rt.rfind(pre, 0) == 0) rt = rt.substr(pre.size());
      why += rt;
    }
    g["recommendation"] = rec;
    groups.push_back(std::move(g));
  }
  if (unfit > 0) why += unfit_text(arr, unfit, ranked_unfit, header.params);
  const bool single = decisions.size() == 1 && group.empty();
  core::Json best_row = nullptr;
  if (single && !decisions[0].is_flat()) best_row = arr[*decisions[0].best];
  if (!outputs.out.empty()) report::write_output(outputs.out, journal_text(header, rows));
  if (!outputs.csv.empty()) {
    std::string head = report::sweep_csv(header.params, core::Json::array(), std::nullopt);
    report::write_output(outputs.csv, head + sweep_csv_lines(header.params, arr, best_mark));
  }
  if (!outputs.json.empty() || doc_out) {
    core::Json doc{{"scenario", header.scenario},
                   {"metric", compare::metric_key(sd.metric)},
                   {"params", header.params},
                   {"group_by", group.empty() ? core::Json(nullptr) : core::Json(group)},
                   {"rows", arr},
                   {"best", best_row},
                   {"groups", groups},
                   {"failed", failed},
                   {"recommendation", single ? groups[0]["recommendation"] : core::Json(nullptr)}};
    if (!header.shard.whole()) doc["shard"] = header.to_json()["shard"];
    if (!outputs.json.empty()) report::write_output(outputs.json, doc.dump(2));
    if (doc_out) *doc_out = std::move(doc);
  }
  return sweep_table_text(header.scenario, header.params, arr, sd.metric, group, marks) + why +
         bucket_cap_note(header.params, arr) + work_note(header.params, sd.metric);
}

Exec exec_collect(const std::string& exe, const std::vector<std::string>& args) {
  int po[2], pe[2];
  if (::pipe(po) != 0 || ::pipe(pe) != 0) throw core::SimulationError(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw core::SimulationError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);
    ::dup2(po[1], 1);
    ::dup2(pe[1], 2);
    ::close(po[0]);
    ::close(po[1]);
    ::close(pe[0]);
    ::close(pe[1]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(po[1]);
  ::close(pe[1]);
  Exec r;
  pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return r;
}

std::vector<std::string> plot_python(const std::string& flag) {
  const char* env = std::getenv("DDPSIM_PYTHON");
  for (const char* c : {env, static_cast<const char*>("python3"), static_cast<const char*>("/usr/bin/python3")}) {
    if (!c || !*c) continue;
    std::vector<std::string> cmd;
    if (std::string(c).find('/') == std::string::npos)
      cmd = {"/usr/bin/env", c};
    else
      cmd = {c};
    std::vector<std::string> a(cmd.begin() + 1, cmd.end());
    a.insert(a.end(), {"-c", "import matplotlib"});
    if (exec_collect(cmd[0], a).code == 0) return cmd;
  }
  throw core::ConfigError(
      flag +
      ": no Python with matplotlib found (tried $DDPSIM_PYTHON, python3, /usr/bin/python3); install "
      "python3-matplotlib or set DDPSIM_PYTHON");
}

std::vector<std::string> check_plot_outputs(const std::filesystem::path& root, const std::string& command,
                                            const std::string& plot_out, const std::string& html_out) {
  if (plot_out.empty() && html_out.empty()) return {};
  if (plot_out == "-") throw core::ConfigError(command + " --plot -: the figure must be a file (.png or .svg)");
  if (html_out == "-") throw core::ConfigError(command + " --html -: the report must be a file (.html)");
  if (!plot_out.empty()) {
    const std::string ext = std::filesystem::path(plot_out).extension().string();
    if (ext != ".png" && ext != ".svg")
      throw core::ConfigError(command + " --plot " + plot_out + ": expected a file ending .png or .svg");
  }
  const auto script = root / "scripts" / "ddpsim-plot";
  const std::string flag = command + (plot_out.empty() ? " --html" : " --plot");
  if (!std::filesystem::exists(script))
    throw core::ConfigError(flag + ": " + script.string() + " is missing (it draws the figure)");
  return plot_python(flag);
}

void draw_plots(const std::filesystem::path& root, const std::vector<std::string>& python, const std::string& command,
                const std::string& json_text, const std::string& title, const std::string& plot_out,
                const std::string& html_out) {
  namespace fs = std::filesystem;
  if (plot_out.empty() && html_out.empty()) return;
  const std::string pid = std::to_string(::getpid());
  const fs::path script = root / "scripts" / "ddpsim-plot";
  const fs::path tmp_json = fs::temp_directory_path() / ("ddpsim-" + command + "-" + pid + ".json");
  report::write_output(tmp_json.string(), json_text);
  std::vector<std::pair<fs::path, fs::path>> moves;  // temporary beside the target -> target
  std::vector<std::string> a(python.begin() + 1, python.end());
  a.insert(a.end(), {script.string(), tmp_json.string(), "--title", title});
  auto tmp_beside = [&](const std::string& target) {
    const fs::path t(target);
    const fs::path tmp = t.parent_path() / (".ddpsim-" + command + "-" + pid + t.extension().string());
    moves.push_back({tmp, t});
    return tmp.string();
  };
  if (!plot_out.empty()) a.insert(a.end(), {"-o", tmp_beside(plot_out)});
  if (!html_out.empty()) a.insert(a.end(), {"--html", tmp_beside(html_out)});
  Exec p = exec_collect(python[0], a);
  std::error_code ec;
  fs::remove(tmp_json, ec);
  if (p.code != 0) {
    for (const auto& [tmp, target] : moves) fs::remove(tmp, ec);
    throw core::SimulationError(command + ": " + script.string() + " failed (exit " + std::to_string(p.code) +
                                "): " + p.err);
  }
  for (const auto& [tmp, target] : moves) {
    fs::rename(tmp, target, ec);
    if (ec)
      throw core::SimulationError(command + ": cannot rename " + tmp.string() + " to " + target.string() + ": " +
                                  ec.message());
  }
}

}  // namespace ddpsim::app
