#include "app/sweep.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
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

std::string finish_sweep(const SweepHeader& header, const std::map<size_t, core::Json>& rows,
                         const SweepOutputs& outputs) {
  core::Json arr = core::Json::array();
  std::optional<size_t> best;
  size_t failed = 0;
  for (const auto& [point, row] : rows) {
    if (row.contains("error"))
      ++failed;
    else if (!best || row["step_time_s"].get<double>() < arr[*best]["step_time_s"].get<double>())
      best = arr.size();
    arr.push_back(row);
  }
  core::Json rec = report::sweep_recommendation(header.params, arr, best);
  if (!outputs.out.empty()) report::write_output(outputs.out, journal_text(header, rows));
  if (!outputs.csv.empty()) report::write_output(outputs.csv, report::sweep_csv(header.params, arr, best));
  if (!outputs.json.empty()) {
    core::Json doc{{"scenario", header.scenario},
                   {"metric", "step_time_s"},
                   {"params", header.params},
                   {"rows", arr},
                   {"best", best ? arr[*best] : core::Json(nullptr)},
                   {"failed", failed},
                   {"recommendation", rec}};
    if (!header.shard.whole()) doc["shard"] = header.to_json()["shard"];
    report::write_output(outputs.json, doc.dump(2));
  }
  return report::sweep_table(header.scenario, header.params, arr, best) + report::recommendation_text(rec);
}

}  // namespace ddpsim::app
