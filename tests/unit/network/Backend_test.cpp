// The network-backend seam without SimGrid: the registry's names and the analytic backend.
#include "network/backend.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "network/analytic.hpp"

namespace ddpsim::network {
namespace {

class RecordingClock : public Clock {
 public:
  void sleep_for(double s) override { sleeps.push_back(s); }
  std::vector<double> sleeps;
};

TEST(Backend, RegistryListsAnalyticAndFlowWithDescriptions) {
  ASSERT_EQ(backend_infos().size(), 2u);
  EXPECT_EQ(backend_infos()[0].name, "analytic");
  EXPECT_EQ(backend_infos()[1].name, "flow");
  for (const auto& b : backend_infos()) EXPECT_FALSE(b.description.empty());
  EXPECT_EQ(backend_names(), "analytic, flow");
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
