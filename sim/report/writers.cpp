#include "report/writers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace ddpsim::report {
namespace {

// The file a path writes to: symlinks (also in its folders) followed, relative paths made absolute.
fs::path real_target(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(path), ec);
  if (ec) throw core::ConfigError(path + ": not a usable output path (" + ec.message() + ")");
  fs::path real = fs::weakly_canonical(abs, ec);
  if (ec) throw core::ConfigError(path + ": not a usable output path (" + ec.message() + ")");
  // A dangling symlink: weakly_canonical stops at the link itself; write where it points.
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(real, ec)); ++hops) {
    fs::path to = fs::read_symlink(real, ec);
    if (ec) break;
    real = fs::weakly_canonical(to.is_absolute() ? to : real.parent_path() / to, ec);
    if (ec) throw core::ConfigError(path + ": not a usable output path (" + ec.message() + ")");
  }
  return real;
}

fs::path check_one(const std::string& path) {
  if (path.empty()) throw core::ConfigError("an output path is empty; expected a file name or -");
  if (path.back() == '/') throw core::ConfigError(path + ": is a folder name; expected a file name");
  const fs::path real = real_target(path);
  std::error_code ec;
  const auto st = fs::status(real, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw core::ConfigError(path + ": exists and is " +
                            (fs::is_directory(st) ? std::string("a directory")
                                                  : std::string("not a regular file (a device, fifo or socket)")) +
                            "; expected a regular file or a new file name (it is left as it is)");
  if (fs::is_symlink(fs::symlink_status(real, ec)))  // a loop of links
    throw core::ConfigError(path + ": a symlink whose target cannot be resolved; expected a regular file");
  const fs::path dir = real.parent_path();
  if (!fs::is_directory(dir, ec))
    throw core::ConfigError(path + ": the folder " + dir.string() +
                            " does not exist; expected a path in an existing folder");
  if (::access(dir.c_str(), W_OK) != 0)
    throw core::ConfigError(path + ": the folder " + dir.string() + " is not writable");
  return real;
}

struct Pending {
  const Output* out;
  fs::path real, tmp;
};

void remove_all(const std::vector<Pending>& pending) {
  for (const auto& p : pending) {
    std::error_code ec;
    if (!p.tmp.empty()) fs::remove(p.tmp, ec);
  }
}

}  // namespace

void check_output_paths(const std::vector<std::string>& paths) {
  std::set<fs::path> seen;
  for (const auto& p : paths) {
    if (p == "-") continue;
    const fs::path real = check_one(p);
    if (!seen.insert(real).second)
      throw core::ConfigError(p + ": named by two outputs of this command; expected a different file for each");
  }
}

void write_outputs(const std::vector<Output>& outputs) {
  std::vector<std::string> paths;
  for (const auto& o : outputs) paths.push_back(o.path);
  check_output_paths(paths);
  std::vector<Pending> pending;
  for (const auto& o : outputs) {
    if (o.path == "-") continue;
    Pending p{&o, check_one(o.path), {}};
    // O_EXCL on a fresh name beside the target: nothing that exists is opened or truncated.
    for (int attempt = 0; attempt < 100 && p.tmp.empty(); ++attempt) {
      fs::path tmp = p.real;
      tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(attempt);
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        remove_all(pending);
        throw core::SimulationError(o.path + ": cannot write (" + std::strerror(errno) + ")");
      }
      p.tmp = tmp;
      std::string text = o.content;
      if (!text.empty() && text.back() != '\n') text += '\n';
      size_t done = 0;
      while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      const bool ok = done == text.size() && ::fsync(fd) == 0;
      const bool closed = ::close(fd) == 0;
      pending.push_back(p);
      if (!ok || !closed) {
        remove_all(pending);
        throw core::SimulationError(o.path + ": write failed (" + std::strerror(errno) + ")");
      }
    }
    if (p.tmp.empty()) {
      remove_all(pending);
      throw core::SimulationError(o.path + ": cannot create a temporary file beside it");
    }
  }
  // Everything is written: move the files into place.
  for (size_t i = 0; i < pending.size(); ++i) {
    std::error_code ec;
    fs::rename(pending[i].tmp, pending[i].real, ec);
    if (ec) {
      remove_all(std::vector<Pending>(pending.begin() + static_cast<long>(i), pending.end()));
      throw core::SimulationError(pending[i].out->path + ": cannot move the output into place (" + ec.message() + ")");
    }
  }
  for (const auto& o : outputs) {
    if (o.path != "-") continue;
    std::cout << o.content;
    if (!o.content.empty() && o.content.back() != '\n') std::cout << '\n';
  }
  std::cout.flush();
}

void write_output(const std::string& path, const std::string& content) { write_outputs({{path, content}}); }

std::string json_text(const core::Json& value, int indent, const std::string& what) {
  if (auto p = core::find_non_finite(value))
    throw core::SimulationError(what + ": " + *p +
                                " is not a finite number (NaN or infinity); nothing is written rather than null");
  return value.dump(indent);
}

}  // namespace ddpsim::report
