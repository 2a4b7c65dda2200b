// The network-backend seam without SimGrid: the analytic backend (the table of backends, which
// builds the flow backend too, is tested in tests/sim/BackendTable_test.cpp).
#include "network/backend.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/specs.hpp"
#include "network/analytic.hpp"

namespace ddpsim::network {
namespace {

class RecordingClock : public Clock {
 public:
  void sleep_for(double s) override { sleeps.push_back(s); }
  std::vector<double> sleeps;
};

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
