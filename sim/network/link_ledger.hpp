#pragma once
// Link statistics of a network backend, SimGrid-free (unit-tested by hand): per link the payload
// bytes of the counted phases and the time it carried traffic (a link is busy while at least one
// counted flow on it is active, so the busy time is the union of its flows' lifetimes), summed per
// link class; and per class a utilisation track over time for the trace's counters.
#include <functional>
#include <string>
#include <vector>

#include "network/link_stats.hpp"

namespace ddpsim::network {

class LinkLedger {
 public:
  // Classes are reported in the order they are added.
  int add_class(const std::string& name);
  // A link of class `cls` with `capacity` bytes/s standing for `count` identical links (a
  // representative flow's); `key` names it through the namer of totals().
  int add_link(int cls, double capacity, long long count, long long key);
  int links() const { return static_cast<int>(links_.size()); }
  int class_of(int link) const { return links_[static_cast<size_t>(link)].cls; }
  double capacity(int link) const { return links_[static_cast<size_t>(link)].capacity; }
  long long count(int link) const { return links_[static_cast<size_t>(link)].count; }

  void add_bytes(int link, double bytes) { links_[static_cast<size_t>(link)].bytes += bytes; }
  // A counted flow on the link starts / ends at simulated time t (times never decrease).
  void start(int link, double t) {
    auto& l = links_[static_cast<size_t>(link)];
    if (l.active++ == 0) l.since = t;
  }
  void end(int link, double t) {
    auto& l = links_[static_cast<size_t>(link)];
    if (--l.active == 0) l.busy += t - l.since;
  }

  // Per class with at least one link: links (counts), summed capacity and bytes, the longest
  // busy time and the link of the highest bytes / capacity (the first of equals) with its name.
  std::vector<LinkClassTotals> totals(const std::function<std::string(long long)>& name, bool timed) const;
  const std::vector<std::string>& class_names() const { return classes_; }
  // Summed capacity of a class's links (counts included).
  double class_capacity(int cls) const;

 private:
  struct Link {
    int cls = 0;
    double capacity = 0;
    long long count = 1;
    long long key = 0;
    double bytes = 0, busy = 0, since = 0;
    int active = 0;
  };
  std::vector<std::string> classes_;
  std::vector<Link> links_;
};

// One class's utilisation over time as segments [t_i, t_{i+1}) carrying bytes_i; consecutive
// intervals of the same rate (to 1e-9) are merged, so the track is as short as the rate changes
// allow and integrates exactly to the bytes given.
class UtilisationTrack {
 public:
  explicit UtilisationTrack(double capacity = 0) : capacity_(capacity) {}
  // `bytes` moved during [t0, t1) (t0 is the previous call's t1, or the start).
  void add(double t0, double t1, double bytes);
  // Bytes that belong to the interval that just ended (a flow's last bytes seen at completion).
  void add_late(double bytes);
  // The counter samples: value[i] = bytes_i / (capacity x duration) from t[i] on, and a final 0
  // at the last interval's end.
  LinkCounterTrack track(const std::string& cls) const;

 private:
  double capacity_ = 0;
  std::vector<double> t_, bytes_;
  double open_end_ = 0;  // end of the last segment
};

}  // namespace ddpsim::network
