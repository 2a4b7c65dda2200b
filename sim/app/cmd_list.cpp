// `ddpsim list`: the bundled models, GPUs, links, clusters and scenarios.
#include <iostream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "core/error.hpp"
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
    for (const auto& n : cat.names(e.kind)) {
      const std::string detail = report::catalog_entry_summary(cat, e.kind, cat.dir(e.kind) / (n + ".json"));
      std::cout << "  " << n << (detail.empty() ? "" : "  -  " + detail) << "\n";
    }
  }
  if (!any)
    throw core::ConfigError("list: \"" + what +
                            "\" is not a category; expected models, gpus, links, clusters or scenarios");
  return 0;
}

}  // namespace ddpsim::app
