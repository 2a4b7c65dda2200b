#pragma once
// What the network backends measure on the links (plain data, SimGrid-free); the report reads it
// (report::StepReport's link statistics and --trace counters).
#include <string>
#include <vector>

namespace ddpsim::network {

// What a network backend measured on one class of links (NVLink port, NIC up, leaf up, ...)
// summed over the steps it counted (the steady steps) and over the class's links: the links the
// job's flows cross. Bytes are the collective's payload on each ring hop ((N-1)/N of a bucket per
// all-reduce phase, the whole buffer per broadcast), not the wire volume the flow backend moves
// to reach the modelled time (which includes protocol and efficiency losses).
struct LinkClassTotals {
  std::string cls;
  long long links = 0;
  double capacity = 0;    // bytes/s, summed over the links
  double bytes = 0;       // summed over the links
  bool timed = false;     // busy times measured (flow backend); false: bytes only (analytic)
  double max_busy_s = 0;  // the longest time one of its links carried traffic
  std::string busiest;    // the link with the highest bytes / capacity (the first of equals)
  double busiest_bytes = 0, busiest_capacity = 0, busiest_busy_s = 0;
};

// Utilisation of one link class over time (Perfetto counter track): from time t[i] to t[i+1]
// the class's links carried value[i] of their summed capacity (mean over the class).
struct LinkCounterTrack {
  std::string cls;
  double capacity = 0;  // bytes/s, summed over the class's links
  std::vector<double> t, value;
};

}  // namespace ddpsim::network
