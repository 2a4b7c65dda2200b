#pragma once
// Text tables of the commands that compare several runs (sweep, bench). The run summary itself is
// report::to_table (report.hpp).
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "report/csv.hpp"
#include "report/report.hpp"

namespace ddpsim::report {

// Why the best row wins, from the rows' own figures: each other row's loss is latency-bound (more,
// smaller collectives: their count and exposed comm), overlap-bound (fewer, larger buckets: the
// last one launched when the backward is nearly over) or something else the figures name; the
// best's own regime (bandwidth-bound when its communication alone outlasts the backward); and,
// when ddp.bucket_cap_mb is swept, the seeds' rule of thumb for the inter-node network next to the
// simulated best. {"best_point", "losers": [{point, kind, text}], "regime", "regime_text",
// "rule_of_thumb": [{inter_node_gbps, range_mb, best_mb, within, text}]}.
// A report (or sweep row) of FullyShardedDataParallel: its `fsdp` names the settings; no buckets.
bool is_fsdp_row(const core::Json& r);

core::Json sweep_recommendation(const std::vector<std::string>& param_paths, const core::Json& rows,
                                std::optional<size_t> best);
std::string recommendation_text(const core::Json& rec);

// The run summary's link table (report::to_table): per link class the bytes per step, links,
// busy share, mean utilisation and busiest link, then the busiest link of all; "" without link
// statistics.
std::string link_table(const StepReport& r);

// `cases`: objects with world_size, num_params, num_buckets, flows, wall_s_per_step, peak_rss_mib.
std::string bench_table(const std::string& scenario_file, int repeat, const core::Json& cases);
// `bench --scaling`: GPUs, flows, wall s per step and peak RSS per size.
std::string scaling_table(const std::string& scenario_file, int repeat, const core::Json& cases);

}  // namespace ddpsim::report
