// What every subcommand shares: the catalog over --data-dir and the default scenario.
#include <spdlog/spdlog.h>

#include "app/commands.hpp"

namespace fs = std::filesystem;

namespace ddpsim::app {

config::Catalog CommonOptions::catalog() const {
  return config::Catalog(data_dir.empty() ? config::Catalog::default_root() : fs::path(data_dir));
}

fs::path scenario_path(const config::Catalog& cat, const std::string& s) {
  fs::path p = cat.resolve(config::Kind::SCENARIO, s.empty() ? "default" : s);
  spdlog::debug("scenario \"{}\" is {} (data dir {})", s.empty() ? "default" : s, p.string(), cat.root().string());
  return p;
}

}  // namespace ddpsim::app
