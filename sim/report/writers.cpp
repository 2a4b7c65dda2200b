#include "report/writers.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.hpp"

namespace ddpsim::report {

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    if (!content.empty() && content.back() != '\n') std::cout << '\n';
    std::cout.flush();
    return;
  }
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw core::SimulationError(path + ": cannot write (" + tmp.string() + " could not be created)");
    out << content;
    if (!content.empty() && content.back() != '\n') out << '\n';
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw core::SimulationError(path + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw core::SimulationError(path + ": cannot move the output into place");
  }
}

}  // namespace ddpsim::report
