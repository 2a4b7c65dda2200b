#pragma once
// A cluster's cost of ownership (the cluster file's optional "ownership" block), so that an owned
// cluster has a price per GPU-hour as a rented one does (compare/compare.hpp option_facts):
//   hours per year in use  = 8760 x utilisation
//   capex per hour         = (server_price x servers + the fabric's capex) / (years x hours per year)
//   power per hour         = server_power_kw x pue x electricity_per_kwh x servers
//   price per GPU-hour     = (capex per hour + power per hour) / (servers x gpus_per_node)
// The fabric's capex is its bill of materials at the fabric's own unit prices (fabric.prices);
// unpriced, it counts as 0 and the row says so. Power is charged for the hours in use only.
#include <optional>
#include <string>

#include "core/json_reader.hpp"

namespace ddpsim::config {

struct Ownership {
  double server_price = 0;         // USD per server, its GPUs included
  double server_power_kw = 0;      // kW per server under load
  double electricity_per_kwh = 0;  // USD
  double pue = 1.0;                // facility power / IT power
  double years = 0;                // straight-line depreciation
  double utilisation = 1.0;        // share of the hours the cluster does paid work
};

inline Ownership parse_ownership(const core::Json& v, const std::string& path, core::Diagnostics& diag) {
  core::ObjectReader r(v, path, diag);
  Ownership o;
  o.server_price = r.number("server_price", true, 0.0, true, 1e12).value_or(0);
  o.server_power_kw = r.number("server_power_kw", true, 0.0, false, 1e6).value_or(0);
  o.electricity_per_kwh = r.number("electricity_per_kwh", true, 0.0, false, 100.0).value_or(0);
  o.pue = r.number_or("pue", 1.0, 1.0, false, 10.0);
  o.years = r.number("years", true, 0.0, true, 100.0).value_or(1);
  o.utilisation = r.number_or("utilisation", 1.0, 0.0, true, 1.0);
  r.raw("sources");
  r.finish();
  return o;
}

// USD per GPU-hour of `servers` servers of `gpus_per_node` GPUs with a fabric of `fabric_capex`.
inline double ownership_price_per_gpu_hour(const Ownership& o, int servers, int gpus_per_node, double fabric_capex) {
  const double hours = o.years * 8760.0 * o.utilisation;
  const double capex_per_hour = (o.server_price * servers + fabric_capex) / hours;
  const double power_per_hour = o.server_power_kw * o.pue * o.electricity_per_kwh * servers;
  return (capex_per_hour + power_per_hour) / (static_cast<double>(servers) * gpus_per_node);
}

}  // namespace ddpsim::config
