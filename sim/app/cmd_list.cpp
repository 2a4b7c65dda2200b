// `ddpsim list`: the bundled models, GPUs, links, clusters and scenarios.
#include <iostream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"
#include "report/views.hpp"

namespace ddpsim::app {

int cmd_list(const CommonOptions& common, const std::string& what) {
  auto cat = common.catalog();
  struct Entry {
    const char* title;
    config::Kind kind;
  };
  const Entry entries[] = {{"models", config::Kind::MODEL},
                           {"gpus", config::Kind::GPU},
                           {"links", config::Kind::LINK},
                           {"clusters", config::Kind::CLUSTER},
                           {"scenarios", config::Kind::SCENARIO}};
  bool any = false;
  for (const auto& e : entries) {
    if (!what.empty() && what != e.title) continue;
    any = true;
    std::cout << e.title << " (" << cat.dir(e.kind).string() << "):\n";
    // Scenarios in subfolders (compare/, claims/) are listed as "folder/name", callable so.
    const auto names = e.kind == config::Kind::SCENARIO ? scenario_names(cat) : cat.names(e.kind);
    for (const auto& n : names) {
      const std::string detail = report::catalog_entry_summary(cat, e.kind, cat.dir(e.kind) / (n + ".json"));
      std::cout << "  " << n << (detail.empty() ? "" : "  -  " + detail) << "\n";
    }
  }
  if (!any)
    throw core::ConfigError("list: \"" + what + "\" is not a category" +
                            core::did_you_mean(what, {"models", "gpus", "links", "clusters", "scenarios"}) +
                            "; expected models, gpus, links, clusters or scenarios");
  return 0;
}

Command register_list(CLI::App& app, CommonOptions& common) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("list", "list bundled models, GPUs, links, clusters and scenarios");
  cmd->add_option("what", *what, "models, gpus, links, clusters or scenarios (default: all)");
  return {cmd, [&common, what] { return cmd_list(common, *what); }};
}
}  // namespace ddpsim::app
