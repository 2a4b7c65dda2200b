// The network-backend seam without SimGrid: the registry's names and the analytic backend.
#include "network/backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "network/analytic.hpp"
#include "network/registry.hpp"

namespace ddpsim::network {
namespace {

class RecordingClock : public Clock {
 public:
  void sleep_for(double s) override { sleeps.push_back(s); }
  std::vector<double> sleeps;
};

TEST(Backend, TableListsAnalyticAndFlowWithDescriptionsAndFactories) {
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
TEST(Backend, ConfigNamesEqualTheRegistry) {
  std::vector<std::string> registered;
  for (const auto& b : backends()) registered.push_back(b.name);
  auto config_names = config::backend_names().all();
  std::sort(config_names.begin(), config_names.end());
  std::sort(registered.begin(), registered.end());
  EXPECT_EQ(config_names, registered);
}

TEST(Backend, AnalyticPhaseTakesItsLatencyPlusTransfer) {
  AnalyticBackend b;
  RecordingClock c;
  Phase p;
  p.start_latency = 2e-6;
  p.timing.latency = 3e-6;
  p.timing.transfer = 1e-3;
  b.run_phase(c, p);
  ASSERT_EQ(c.sleeps.size(), 1u);
  EXPECT_DOUBLE_EQ(c.sleeps[0], 1.005e-3);
  EXPECT_EQ(b.flows(), 0u);
  EXPECT_EQ(b.name(), "analytic");
}

}  // namespace
}  // namespace ddpsim::network
