#pragma once
// `ddpsim compare`: the domain half, SimGrid-free (the app runs the children). The options are
// (cluster option, node count) pairs; each one's `ddpsim run` report becomes a row with the
// figures a buyer compares: throughput, scaling efficiency against one GPU of the same cluster,
// overlap, exposed communication, memory per GPU and fit, price per hour, cost per million
// samples, time and cost to train N samples or tokens, and the fabric's bill of materials. The
// best option per criterion is marked among the rows that ran and do not fail to fit.
//
// Definitions (README "Compare clusters before buying"):
//   samples_per_step          = samples_per_rank x world_size
//   scaling_efficiency        = (samples_per_s / world_size) / samples_per_s of the same option on
//                               1 node with 1 GPU (gpus_per_node=1): throughput per GPU relative
//                               to one GPU of the same cluster; 1.0 = perfect scaling
//   price_per_hour            = price_per_gpu_hour x world_size            (USD)
//   cost_per_million_samples  = price_per_hour x step_time_s / 3600 / samples_per_step x 1e6
//   train_time_s (N samples)  = N / samples_per_s;  (N tokens) = N / (samples_per_s x seq_len)
//   train_cost                = price_per_hour x train_time_s / 3600
#include <optional>
#include <string>
#include <vector>

#include "config/catalog.hpp"
#include "config/specs.hpp"
#include "core/json_reader.hpp"
#include "fabric/fabric.hpp"

namespace ddpsim::compare {

// One --cluster: `[LABEL=]CLUSTER[:PATH=VALUE[,PATH=VALUE...]]`. CLUSTER is a bundled cluster
// name or a cluster file; the PATH=VALUE pairs are scenario --set overrides for this option only
// (applied after the command's own --set), e.g. `dgx-h100:fabric.topology=fat_tree,
// fabric.oversubscription=2:1`. A comma starts a new pair only when `PATH=` follows it, so JSON
// values with commas stay whole. LABEL names the option in the outputs (default: the whole text).
// A path starting `cluster.` changes the cluster file itself (e.g. `cluster.inter_node.nics_per_node=2`,
// `cluster.inter_node.link=roce-400g`): the option then runs an inline copy of the file with those
// fields set (see inline_cluster_overrides).
struct ClusterOption {
  std::string text;
  std::string label;
  std::string cluster;
  std::vector<std::string> overrides;  // as given, `cluster.` ones included
  std::string cluster_value;           // what `--set cluster=` gets; empty: `cluster` itself
};
// Throws core::ConfigError naming --cluster, the text and what is allowed.
ClusterOption parse_cluster_option(const std::string& text);
// Labels must be distinct (two options that read the same cannot be told apart in the outputs).
void check_distinct_labels(const std::vector<ClusterOption>& options);

// Resolves the option's `cluster.PATH=VALUE` overrides: reads the cluster file (bundled name or
// path), applies them, and keeps the result as the inline cluster object the runs get. Throws
// core::ConfigError for an unknown cluster or a malformed override.
void inline_cluster_overrides(const config::Catalog& catalog, ClusterOption& option);

// --nodes "1,16,64": distinct integers >= 1, in the order given.
std::vector<int> parse_nodes(const std::string& text);

// The grid: every option with every node count, option-major, in the order given. `nodes` empty:
// one point per option at the scenario's own node count (nodes 0 in the point).
struct Point {
  size_t option = 0;
  int nodes = 0;  // 0: the scenario's own
};
std::vector<Point> option_grid(size_t options, const std::vector<int>& nodes);

// --set lists of a point's child run and of its 1-GPU baseline (nodes=1, gpus_per_node=1).
std::vector<std::string> point_overrides(const std::vector<std::string>& global, const ClusterOption& option,
                                         int nodes);
std::vector<std::string> baseline_overrides(const std::vector<std::string>& global, const ClusterOption& option);

// What to train: --samples N or --tokens N (none: no time/cost-to-train columns).
struct Target {
  enum Kind { NONE, SAMPLES, TOKENS } kind = NONE;
  double amount = 0;
};

// Facts of the loaded scenario of a point, known before it runs (the parent reads them).
struct OptionFacts {
  std::string cluster_name;
  double price_per_gpu_hour = 0;  // 0: no price in the cluster file
  std::string topology;           // fabric topology ("single_switch" is the ideal switch)
  bool has_fabric = false;        // an inter-node link exists (nodes > 1 possible)
  fabric::Bom bom;
  bool capex_priced = false;  // the fabric gives unit prices
  // "rent" (the cluster's price_per_gpu_hour), "ownership" (its cost of ownership,
  // config/ownership.hpp, over the servers the bill of materials wires) or "" (no price).
  std::string price_source;
  core::Json ownership;  // with "ownership": the terms of the price (null otherwise)
  // Placement: what the runs assume (the fabric's `placement`; "" without a fabric), whether the
  // provider guarantees it (fabric.placement_guaranteed), and, where it does not and the job spans
  // nodes, the --set overrides of the scattered run (fabric::scattered_overrides; empty: none).
  std::string placement;
  bool placement_guaranteed = true;
  std::string routing;  // the fabric's routing ("dmodk", "ecmp", "adaptive")
  double leaf_oversubscription = 1, spine_oversubscription = 1;
  std::vector<std::string> scattered_set;
  std::string scattered_note;  // why no scattered run although placement is not guaranteed
};
// The fabric's bill of materials for the scenario's own cluster (servers wired as the flow
// backend wires them: the job's nodes rounded up to whole leaves or scalable units).
OptionFacts option_facts(const config::ClusterSpec& cluster);

// The arithmetic, each a closed form of the definitions above (tests/unit/compare).
double cost_per_million_samples(double price_per_hour, double step_time_s, double samples_per_step);
double scaling_efficiency(double samples_per_s, int world_size, double baseline_samples_per_s,
                          int baseline_world_size = 1);

// A finished point's row: the report fields the outputs use, the derived figures, `bom`, and the
// whole run report under `run`. `baseline` is the 1-GPU run report (null when it failed).
core::Json compare_row(const Point& point, const ClusterOption& option, const core::Json& report,
                       const core::Json* baseline, const OptionFacts& facts, const Target& target);
// Attaches the scattered run of a row whose placement is not guaranteed: its report (or the
// error that stopped it) under row.placement.scattered, with the figures explain_difference reads.
void attach_scattered(core::Json& row, const core::Json* report, const std::string& error);
// For every row with a scattered run: row.placement.range_s = [packed, scattered] step time,
// relative difference, tolerance (--tolerance, else the row's prediction band, else 1 %: the tie
// threshold compare uses) and `matters` (the difference exceeds it), and, when it matters, the
// mechanism (explain_difference of the scattered run against the assumed one).
void placement_ranges(core::Json& rows, std::optional<double> tolerance);
// A failed point's row: label, option, nodes, error, exit_code.
core::Json failed_row(const Point& point, const ClusterOption& option, const std::string& error, int exit_code);

// Marks the best rows in place (`best`: list of criteria per row) and returns {criterion: row
// index or null}. Criteria: "fastest" (most samples/s, i.e. least time to train N), "cheapest"
// (least cost per million samples; rows with a price), "best scaling" (highest scaling
// efficiency). Rows that failed or whose `fits` is false are excluded; ties (equal to
// 1e-9, relative) go to the first row.
// Criteria: "fastest" (most samples/s) and "cheapest" (least cost per million samples; rows with
// a price). Rows within `tolerance` (relative; unset: the best row's prediction band, else 1 %)
// of the best tie: each is marked "CRITERION (tie)" and best["ties"][CRITERION] holds {rows,
// tolerance, tolerance_source, reason}. Scaling efficiency is not a criterion: the slowest GPU
// scales best. Equal to 1e-9 (relative): the first row is the reference.
core::Json mark_best(core::Json& rows, std::optional<double> tolerance = std::nullopt);

// Why row `r` is slower than row `b` (both finished rows): {kind, text, step_time_delta_s}, kind
// one of memory (does not fit), compute (GPU work differs by at least half the step difference),
// ecmp-collisions (a link class above the leaves whose busiest link carries > 1.25x the class
// mean), spine-oversubscription (the busiest link, >= 30 % utilised, is an uplink class the row's
// bom says is oversubscribed), bottleneck-link (busiest link >= 30 % utilised), latency-bound (links less busy: the
// per-collective latency of its buckets), communication (no link statistics) or other.
core::Json explain_difference(const core::Json& r, const core::Json& b);
// Why the rows `tied` (indices) tie: identical to 1e-9 with no traffic above the leaves and
// different fabrics -> placement hides the fabric; else identical; else within the tolerance.
std::string tie_reason(const core::Json& rows, const std::vector<size_t>& tied);
// Per node count, the fastest row that fits and each other row's difference from it (or a tie).
core::Json why_block(const core::Json& rows, std::optional<double> tolerance);

// The outputs: text table(s) for stdout, CSV, and the JSON document.
struct Outputs {
  std::string table, csv;
  core::Json json;
};
Outputs render(const std::string& scenario, const std::vector<ClusterOption>& options,
               const std::vector<std::string>& global_overrides, const Target& target, core::Json rows,
               const core::Json& baselines, std::optional<double> tolerance = std::nullopt);

// A run report (or compare row) whose memory per GPU exceeds its GPU's (`fits` false; unknown: no).
bool does_not_fit(const core::Json& report);
// "needs 130.8 GiB per GPU, the GPU has 80.0 GiB; would fit with ..." (the report's
// fit_options.text, report/report.hpp fit_options_text, when it has one).
std::string memory_note(const core::Json& report);

}  // namespace ddpsim::compare
