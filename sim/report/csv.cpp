#include "report/csv.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace ddpsim::report {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string bucket_csv(const StepReport& r) {
  std::ostringstream o;
  o << "iteration,index,bytes,num_tensors,ready_s,launch_s,start_s,reduce_scatter_end_s,end_s,alone_s,exposed_s,"
       "algorithm,protocol,channels\n";
  auto rows = [&](const IterationReport& it) {
    for (const auto& b : it.buckets)
      o << it.iteration << ',' << b.index << ',' << csv_number(b.bytes) << ',' << b.num_tensors << ',' << b.ready_s
        << ',' << b.launch_s << ',' << b.start_s << ',' << b.rs_end_s << ',' << b.end_s << ',' << b.alone_s << ','
        << b.exposed_s << ',' << b.algorithm << ',' << b.protocol << ',' << b.channels << '\n';
  };
  if (r.has_iteration1) rows(r.iteration1);
  rows(r.steady);
  return o.str();
}

std::string csv_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) {
    char b[32];
    std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
    return b;
  }
  return core::Json(v).dump();  // shortest round-trip form
}

std::string csv_value(const core::Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_escape(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number()) return csv_number(v.get<double>());
  return csv_escape(v.dump());
}

std::string param_text(const core::Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string sweep_csv(const std::vector<std::string>& param_paths, const core::Json& rows, std::optional<size_t> best) {
  static const char* fields[] = {"world_size",   "nodes",          "gpus_per_node", "cluster",     "model",
                                 "step_time_s",  "compute_only_s", "comm_alone_s",  "comm_busy_s", "exposed_comm_s",
                                 "contention_s", "overlap_ratio",  "num_buckets",   "grad_bytes",  "samples_per_s"};
  std::ostringstream o;
  o << "point";
  for (const auto& p : param_paths) o << ',' << csv_escape(p);
  for (const char* f : fields) o << ',' << f;
  o << ",best,exit_code,error\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    o << r["point"].get<long long>();
    for (const auto& p : param_paths) o << ',' << csv_escape(param_text(r["params"].value(p, core::Json())));
    const bool failed = r.contains("error");
    for (const char* f : fields) o << ',' << (r.contains(f) ? csv_value(r[f]) : std::string());
    o << ',' << (best && *best == i ? 1 : 0) << ',' << (failed ? r.value("exit_code", 1) : 0) << ','
      << (failed ? csv_escape(r["error"].get<std::string>()) : std::string()) << '\n';
  }
  return o.str();
}

}  // namespace ddpsim::report
