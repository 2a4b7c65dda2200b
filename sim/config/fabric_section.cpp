#include "config/fabric_section.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "fabric/fabric.hpp"

using ddpsim::core::Diagnostics;
using ddpsim::core::join_path;
using ddpsim::core::Json;
using ddpsim::core::ObjectReader;
using ddpsim::core::Quantity;

namespace ddpsim::config {

namespace {

// "2:1", "1:1", 2, 2.5: downlink over uplink bandwidth, >= 1.
std::optional<double> ratio(const Json& v, const std::string& path, Diagnostics& d) {
  const char* allowed = "a ratio \"D:U\" with D >= U > 0 (e.g. \"2:1\") or a number >= 1";
  if (v.is_number()) {
    if (v.get<double>() >= 1.0) return v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const auto colon = s.find(':');
    if (colon != std::string::npos) {
      char* e1 = nullptr;
      char* e2 = nullptr;
      const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
      const double down = std::strtod(a.c_str(), &e1), up = std::strtod(b.c_str(), &e2);
      if (!a.empty() && !b.empty() && *e1 == '\0' && *e2 == '\0' && up > 0 && down >= up) return down / up;
    }
  }
  d.add_value(path, v, allowed);
  return std::nullopt;
}

}  // namespace

FabricSpec parse_fabric(const Json& j, const std::string& path, Diagnostics& d) {
  const FabricSpec def;
  FabricSpec f;
  ObjectReader r(j, path, d);
  r.raw("description");
  r.raw("sources");
  f.topology = fabric::topology_names().value(
      r.string_or("topology", to_string(def.topology), fabric::topology_names().all()), def.topology);
  f.tiers = static_cast<int>(r.integer_or("tiers", def.tiers, 2, 3));
  f.nics_per_leaf = static_cast<int>(r.integer_or("nics_per_leaf", def.nics_per_leaf, 1, 1 << 12));
  f.leaves_per_pod = static_cast<int>(r.integer_or("leaves_per_pod", def.leaves_per_pod, 1, 1 << 12));
  f.switch_radix = static_cast<int>(r.integer_or("switch_radix", def.switch_radix, 4, 1 << 12));
  f.planes = static_cast<int>(r.integer_or("planes", def.planes, 1, 2));
  if (const Json* o = r.raw("oversubscription")) {
    const std::string p = join_path(path, "oversubscription");
    if (o->is_object()) {
      ObjectReader orr(*o, p, d);
      if (const Json* v = orr.raw("leaf")) f.leaf_oversubscription = ratio(*v, p + "/leaf", d).value_or(1.0);
      if (const Json* v = orr.raw("spine")) f.spine_oversubscription = ratio(*v, p + "/spine", d).value_or(1.0);
      orr.finish();
    } else {
      f.leaf_oversubscription = ratio(*o, p, d).value_or(1.0);
    }
  }
  if (const Json* o = r.raw("spine_oversubscription"))
    f.spine_oversubscription = ratio(*o, join_path(path, "spine_oversubscription"), d).value_or(1.0);
  if (auto v = r.quantity("uplink_bandwidth", Quantity::BANDWIDTH, false)) f.uplink_bandwidth = v;
  if (auto v = r.quantity("core_link_bandwidth", Quantity::BANDWIDTH, false)) f.core_link_bandwidth = v;
  f.switch_latency = r.quantity("switch_latency", Quantity::TIME, false, true).value_or(def.switch_latency);
  f.routing = fabric::routing_names().value(
      r.string_or("routing", to_string(def.routing), fabric::routing_names().all()), def.routing);
  f.routing_seed = static_cast<uint64_t>(r.integer_or("routing_seed", 1, 0, 1LL << 53));
  f.placement = fabric::placement_names().value(
      r.string_or("placement", to_string(def.placement), fabric::placement_names().all()), def.placement);
  f.placement_seed = static_cast<uint64_t>(r.integer_or("placement_seed", 1, 0, 1LL << 53));
  f.placement_guaranteed = r.boolean_or("placement_guaranteed", def.placement_guaranteed);
  f.servers = static_cast<int>(r.integer_or("servers", def.servers, 1, 1 << 20));
  if (auto v = r.number("background_load", false, 0.0, false, 0.95)) f.background_load = *v;
  f.flows_per_nic = static_cast<int>(r.integer_or("flows_per_nic", def.flows_per_nic, 1, 64));
  if (const Json* pj = r.raw("prices")) {
    ObjectReader pr(*pj, join_path(path, "prices"), d);
    f.price_per_switch = pr.number_or("switch", 0, 0.0);
    f.price_per_cable = pr.number_or("cable", 0, 0.0);
    f.price_per_nic = pr.number_or("nic", 0, 0.0);
    pr.raw("source");
    pr.finish();
  }
  r.finish();
  if (f.tiers == 3 && f.leaves_per_pod == 0 && f.topology != FabricTopology::SINGLE_SWITCH)
    d.add(join_path(path, "leaves_per_pod"), "missing; required with tiers 3: leaves under one spine group");
  return f;
}

void check_fabric_wiring(const FabricSpec& f, int nodes, int nics, double nic_bw, const std::string& path,
                         Diagnostics& d) {
  if (f.is_single_switch()) return;
  if (nics < 1 || nic_bw <= 0) {
    d.add(path, "topology \"" + to_string(f.topology) + "\" needs a cluster with inter_node NICs");
    return;
  }
  if (f.servers > 0 && f.servers < nodes)
    d.add(join_path(path, "servers"), std::to_string(f.servers) + " is fewer than the job's " + std::to_string(nodes) +
                                          " nodes; expected >= " + std::to_string(nodes));
  try {
    fabric::Fabric(f, fabric::Fabric::servers_for(f, nodes, nics), nics, nic_bw);
  } catch (const core::ConfigError& e) {
    d.add(path, e.what());
  }
}

}  // namespace ddpsim::config
