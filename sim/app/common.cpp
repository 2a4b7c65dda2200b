// What every subcommand shares: the catalog over --data-dir and the default scenario.
#include <spdlog/spdlog.h>

#include <iostream>

#include "app/commands.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;

namespace ddpsim::app {

config::Catalog CommonOptions::catalog() const {
  return config::Catalog(data_dir.empty() ? config::Catalog::default_root() : fs::path(data_dir));
}

void check_outputs(std::initializer_list<std::string> paths) {
  std::vector<std::string> given;
  for (const auto& p : paths)
    if (!p.empty()) given.push_back(p);
  report::check_output_paths(given);
}

int emit(const report::Rendered& r, const std::string& json_out, const std::string& what) {
  if (!json_out.empty()) report::write_output(json_out, report::json_text(r.doc, 2, what));
  if (json_out != "-") std::cout << r.text;
  return r.status;
}

fs::path scenario_path(const config::Catalog& cat, const std::string& s) {
  fs::path p = cat.resolve(config::Kind::SCENARIO, s.empty() ? "default" : s);
  spdlog::debug("scenario \"{}\" is {} (data dir {})", s.empty() ? "default" : s, p.string(), cat.root().string());
  return p;
}

}  // namespace ddpsim::app
