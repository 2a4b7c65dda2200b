#include "network/link_ledger.hpp"

#include <algorithm>
#include <cmath>

namespace ddpsim::network {

int LinkLedger::add_class(const std::string& name) {
  classes_.push_back(name);
  return static_cast<int>(classes_.size()) - 1;
}

int LinkLedger::add_link(int cls, double capacity, long long count, long long key) {
  Link l;
  l.cls = cls;
  l.capacity = capacity;
  l.count = count;
  l.key = key;
  links_.push_back(l);
  return static_cast<int>(links_.size()) - 1;
}

double LinkLedger::class_capacity(int cls) const {
  double c = 0;
  for (const auto& l : links_)
    if (l.cls == cls) c += l.capacity * static_cast<double>(l.count);
  return c;
}

std::vector<LinkClassTotals> LinkLedger::totals(const std::function<std::string(long long)>& name, bool timed) const {
  std::vector<LinkClassTotals> out(classes_.size());
  std::vector<const Link*> best(classes_.size(), nullptr);
  for (size_t c = 0; c < classes_.size(); ++c) {
    out[c].cls = classes_[c];
    out[c].timed = timed;
  }
  for (const auto& l : links_) {
    auto& t = out[static_cast<size_t>(l.cls)];
    const double n = static_cast<double>(l.count);
    t.links += l.count;
    t.capacity += l.capacity * n;
    t.bytes += l.bytes * n;
    t.max_busy_s = std::max(t.max_busy_s, l.busy);
    const Link*& b = best[static_cast<size_t>(l.cls)];
    // Strictly higher bytes / capacity (compared without dividing): the first of equals stays.
    if (!b || l.bytes * b->capacity > b->bytes * l.capacity * (1 + 1e-12)) b = &l;
  }
  std::vector<LinkClassTotals> kept;
  for (size_t c = 0; c < out.size(); ++c) {
    if (!best[c]) continue;
    out[c].busiest = name(best[c]->key);
    out[c].busiest_bytes = best[c]->bytes;
    out[c].busiest_capacity = best[c]->capacity;
    out[c].busiest_busy_s = best[c]->busy;
    kept.push_back(out[c]);
  }
  return kept;
}

void UtilisationTrack::add(double t0, double t1, double bytes) {
  if (!t_.empty()) {
    if (t0 > open_end_) add(open_end_, t0, 0.0);  // a gap: an idle segment
    t0 = open_end_;                               // never overlap the last segment
  }
  if (t1 <= t0) {
    add_late(bytes);
    return;
  }
  if (!t_.empty()) {
    // Same rate as the open segment (to 1e-9 relative, or both idle): extend it.
    const double r_open = bytes_.back() / (open_end_ - t_.back());
    const double r_new = bytes / (t1 - t0);
    if (std::abs(r_new - r_open) <= 1e-9 * std::max(r_new, r_open)) {
      bytes_.back() += bytes;
      open_end_ = t1;
      return;
    }
  }
  t_.push_back(t0);
  bytes_.push_back(bytes);
  open_end_ = t1;
}

void UtilisationTrack::add_late(double bytes) {
  if (bytes == 0) return;
  if (t_.empty()) return;  // nothing can have moved before the first interval
  bytes_.back() += bytes;
}

LinkCounterTrack UtilisationTrack::track(const std::string& cls) const {
  LinkCounterTrack out;
  out.cls = cls;
  out.capacity = capacity_;
  for (size_t i = 0; i < t_.size(); ++i) {
    const double t1 = i + 1 < t_.size() ? t_[i + 1] : open_end_;
    out.t.push_back(t_[i]);
    out.value.push_back(capacity_ > 0 ? bytes_[i] / (capacity_ * (t1 - t_[i])) : 0.0);
  }
  if (!t_.empty()) {
    out.t.push_back(open_end_);
    out.value.push_back(0.0);
  }
  return out;
}

}  // namespace ddpsim::network
