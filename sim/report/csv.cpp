#include "report/csv.hpp"

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
      o << it.iteration << ',' << b.index << ',' << b.bytes << ',' << b.num_tensors << ',' << b.ready_s << ','
        << b.launch_s << ',' << b.start_s << ',' << b.rs_end_s << ',' << b.end_s << ',' << b.alone_s << ','
        << b.exposed_s << ',' << b.algorithm << ',' << b.protocol << ',' << b.channels << '\n';
  };
  if (r.has_iteration1) rows(r.iteration1);
  rows(r.steady);
  return o.str();
}

std::string sweep_csv(const std::vector<std::string>& param_paths, const std::vector<SweepPoint>& grid,
                      const core::Json& rows, size_t best) {
  std::ostringstream o;
  for (const auto& p : param_paths) o << csv_escape(p) << ',';
  o << "step_time_s,compute_only_s,comm_alone_s,comm_busy_s,exposed_comm_s,overlap_ratio,num_buckets,samples_per_s,"
       "best\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [k, v] : grid[i]) o << csv_escape(v) << ',';
    const auto& r = rows[i];
    o << r["step_time_s"].get<double>() << ',' << r["compute_only_s"].get<double>() << ','
      << r["comm_alone_s"].get<double>() << ',' << r["comm_busy_s"].get<double>() << ','
      << r["exposed_comm_s"].get<double>() << ','
      << (r["overlap_ratio"].is_null() ? std::string("") : std::to_string(r["overlap_ratio"].get<double>())) << ','
      << r["num_buckets"].get<long long>() << ',' << r["samples_per_s"].get<double>() << ',' << (i == best ? 1 : 0)
      << '\n';
  }
  return o.str();
}

}  // namespace ddpsim::report
