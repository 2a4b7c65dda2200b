#include "app/sweep.hpp"

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/text.hpp"

namespace ddpsim::app {
namespace {

struct Running {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
};

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0)
      out.append(buf, static_cast<size_t>(n));
    else if (n == 0)
      break;
    else if (errno != EINTR)
      break;
  }
  return out;
}

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

}  // namespace

std::vector<ChildResult> run_in_children(const std::vector<std::function<core::Json()>>& work, int jobs) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<ChildResult> results(work.size());
  std::vector<Running> running;
  size_t next = 0;
  auto start_one = [&](size_t i) {
    int fds[2];
    if (::pipe(fds) != 0) throw core::SimulationError(std::string("pipe failed: ") + std::strerror(errno));
    pid_t pid = ::fork();
    if (pid < 0) throw core::SimulationError(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
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
    running.push_back({pid, fds[0], i});
  };
  while (next < work.size() || !running.empty()) {
    while (next < work.size() && static_cast<int>(running.size()) < jobs) start_one(next++);
    // Collect the oldest child: results are small and children that finish early simply wait.
    Running r = running.front();
    running.erase(running.begin());
    std::string text = read_all(r.fd);
    ::close(r.fd);
    int status = 0;
    while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
    }
    spdlog::debug("child process {} (configuration {}) ended with status {}", r.pid, r.index + 1, status);
    ChildResult& out = results[r.index];
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
      out.exit_code = 1;
      out.error = WIFSIGNALED(status)
                      ? "child process killed by signal " + std::to_string(WTERMSIG(status))
                      : "child process exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
    }
  }
  return results;
}

SweepParam parse_sweep_param(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    throw core::ConfigError("--param " + text + ": expected PATH=V1,V2,..., e.g. ddp.bucket_cap_mb=1,5,25");
  SweepParam p;
  p.path = text.substr(0, eq);
  for (auto& v : core::split_list(std::string_view(text).substr(eq + 1))) {
    if (v.empty()) throw core::ConfigError("--param " + text + ": empty value in the list");
    p.values.push_back(std::move(v));
  }
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

}  // namespace ddpsim::app
