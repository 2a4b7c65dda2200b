// The table of network backends (network/registry.cpp): each entry named, described and buildable,
// and the names equal those config parses for simulation.backend. Here, not in the unit tests,
// because the table's flow factory links SimGrid.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "network/registry.hpp"

namespace ddpsim::network {
namespace {

TEST(BackendTable, TableListsAnalyticAndFlowWithDescriptionsAndFactories) {
  ASSERT_EQ(backends().size(), 2u);
  EXPECT_EQ(backends()[0].name, "analytic");
  EXPECT_EQ(backends()[1].name, "flow");
  for (const auto& b : backends()) {
    EXPECT_FALSE(b.description.empty());
    EXPECT_TRUE(static_cast<bool>(b.factory)) << b.name;
  }
  EXPECT_EQ(backend_names(), "analytic, flow");
}

// A scenario's simulation.backend is checked against config's names when it is read; each must
// have a registered backend, and every registered backend must be nameable.
TEST(BackendTable, ConfigNamesEqualTheRegistry) {
  std::vector<std::string> registered;
  for (const auto& b : backends()) registered.push_back(b.name);
  auto config_names = config::backend_names().all();
  std::sort(config_names.begin(), config_names.end());
  std::sort(registered.begin(), registered.end());
  EXPECT_EQ(config_names, registered);
}

}  // namespace
}  // namespace ddpsim::network
