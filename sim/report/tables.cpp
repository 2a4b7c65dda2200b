#include "report/tables.hpp"

#include <cstdio>
#include <sstream>

#include "core/units.hpp"

namespace ddpsim::report {

std::string sweep_table(const std::string& scenario_file, const std::vector<std::string>& param_paths,
                        const std::vector<SweepPoint>& grid, const core::Json& rows, size_t best) {
  std::ostringstream o;
  o << "sweep of " << scenario_file << " (" << rows.size() << " configurations; best = least step time)\n";
  std::string head;
  for (const auto& p : param_paths) {
    char b[64];
    std::snprintf(b, sizeof b, "%22s", p.c_str());
    head += b;
  }
  o << head << "   step time  exposed comm   overlap  buckets\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::string line;
    for (const auto& [k, v] : grid[i]) {
      char b[64];
      std::snprintf(b, sizeof b, "%22s", v.c_str());
      line += b;
    }
    char b[160];
    std::snprintf(
        b, sizeof b, "  %10s  %12s  %8s  %7lld%s\n", core::format_time(r["step_time_s"].get<double>()).c_str(),
        core::format_time(r["exposed_comm_s"].get<double>()).c_str(),
        r["overlap_ratio"].is_null()
            ? "n/a"
            : (std::to_string(static_cast<int>(r["overlap_ratio"].get<double>() * 1000) / 10.0).substr(0, 5) + "%")
                  .c_str(),
        r["num_buckets"].get<long long>(), i == best ? "   <- best" : "");
    o << line << b;
  }
  return o.str();
}

std::string bench_table(const std::string& scenario_file, int repeat, const core::Json& cases) {
  std::ostringstream o;
  o << "bench: " << scenario_file << "\n  world_size    params   buckets       flows   wall s/step (median of "
    << repeat << ")   peak RSS MiB\n";
  for (const auto& c : cases) {
    char b[200];
    std::snprintf(b, sizeof b, "  %10d  %8d  %8lld  %10llu   %.4f%34.1f\n", c["world_size"].get<int>(),
                  c["num_params"].get<int>(), c["num_buckets"].get<long long>(), c["flows"].get<unsigned long long>(),
                  c["wall_s_per_step"].get<double>(), c["peak_rss_mib"].get<double>());
    o << b;
  }
  return o.str();
}

std::string scaling_table(const std::string& scenario_file, int repeat, const core::Json& cases) {
  std::ostringstream o;
  o << "bench --scaling: " << scenario_file << " (wall s per simulated step: median of " << repeat << ")\n"
    << "        GPUs       flows   wall s/step   peak RSS MiB\n";
  for (const auto& c : cases) {
    char b[200];
    std::snprintf(b, sizeof b, "  %10d  %10llu  %12.4f  %13.1f\n", c["world_size"].get<int>(),
                  c["flows"].get<unsigned long long>(), c["wall_s_per_step"].get<double>(),
                  c["peak_rss_mib"].get<double>());
    o << b;
  }
  return o.str();
}

}  // namespace ddpsim::report
