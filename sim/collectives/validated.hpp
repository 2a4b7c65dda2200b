#pragma once
// How far a collective's prediction can be trusted (issue 24 item 4): the public nccl-tests
// tables (all_reduce_perf, and fewer of the other collectives) the NCCL model was checked against
// (tests/data/nccl-tests, tests/data/published_nccl_tests; sources in their README / files) and the median |busbw
// error| the model reaches on each, as documented in sim/collectives/NOTES.md and held by
// tests/unit/collectives/NcclDatasets_test.cpp. This is the one place the table of validated cases lives; `collective
// --explain` and the run report read it.
#include <string>
#include <vector>

#include "collectives/func.hpp"

namespace ddpsim::collectives {

// The size classes a table's error is taken in, by the size nccl-tests prints for a call (an
// all-gather's whole output, a reduce-scatter's input per rank, the buffer otherwise): below 1 MiB,
// [1, 64) MiB (where DDP's buckets and the protocol switches sit), >= 64 MiB (where the bandwidth
// sets the time).
enum class SizeClass { SMALL, MID, BIG };
inline constexpr SizeClass kSizeClasses[] = {SizeClass::SMALL, SizeClass::MID, SizeClass::BIG};
inline SizeClass size_class(double nccl_tests_bytes) {
  return nccl_tests_bytes < 1024.0 * 1024.0        ? SizeClass::SMALL
         : nccl_tests_bytes < 64 * 1024.0 * 1024.0 ? SizeClass::MID
                                                   : SizeClass::BIG;
}
// "below 1 MiB", "at 1-64 MiB", "at >= 64 MiB"
const char* size_class_label(SizeClass k);

struct ValidatedCase {
  const char* cluster_class;  // what was measured, in words
  const char* preset;         // the bundled cluster preset the check runs through
  const char* gpu;            // the preset's GPU (configs/gpus name)
  int nodes;
  const char* table;    // the data file (tests/data/...)
  double median_large;  // median |busbw error| at >= 1 MiB (fraction)
  double median_small;  // < 1 MiB; < 0: the table has no such rows
  // The >= 1 MiB rows split at 64 MiB (SizeClass MID and BIG); < 0: no such rows.
  double median_mid, median_big;
  bool forced = false;           // the run forced its algorithm (NCCL_ALGO): a class match skips it
  Func func = Func::ALL_REDUCE;  // the collective the table measured (its nccl-tests binary)
};

const std::vector<ValidatedCase>& validated_cases();

// The closest validated case of collective `func` for a cluster preset (or file) named `cluster`
// with GPU `gpu` at `nodes` nodes: the same preset at the nearest node count (log2 distance, ties
// to fewer nodes), else the same GPU (runs with NCCL's default algorithm only); nullptr when
// neither has a table of that collective.
const ValidatedCase* closest_validated(const std::string& cluster, const std::string& gpu, int nodes,
                                       Func func = Func::ALL_REDUCE);

// The held-out median |busbw error| of the NCCL model by node count (issue 24's public
// all_reduce_perf tables, not in this repository): on EFA (aws-ofi-nccl `net_plugin`) and on
// InfiniBand-class fabrics; linear in log2(nodes) between the measured node counts, flat beyond.
double held_out_error(const std::string& net_plugin, int nodes);

// What a prediction of collective `func` rests on: the closest validated table of that collective
// (nullptr: none for this cluster class), and, from two nodes on where the run leaves that table
// (another preset, or more nodes than it had), the held-out figure at its node count (`grown`, 0
// otherwise). error = max(base, grown): the median |busbw error| to expect at >= 1 MiB; `held_out`
// says where `grown` comes from when it exceeds `base`. By size class the same with the table's
// median of that class (below 1 MiB, [1, 64) MiB, >= 64 MiB; a table without rows of a class
// gives its >= 1 MiB median there): error_small / error_mid / error_big = max(base_x, grown), the
// held-out growth being known at >= 1 MiB only.
// Without a table: for an all-reduce, the worst one-node all-reduce table's medians, per class;
// for another collective, per class the larger of the all-reduce's figures for this cluster
// (`fallback`, its closest all_reduce_perf table) and the worst one-node table of that collective
// (`worst`, by its >= 1 MiB median): an all-reduce table alone does not vouch for the other
// collectives (on the one machine measured for all of them, 8 x A100 with -g 8, the model's
// all_gather_perf median at 1-64 MiB is 87.8 % against all_reduce_perf's 22.4 % on another A100
// node: an all-gather of a size moves half of what the all-reduce does, so more of its sizes fall
// where every function is predicted too fast).
struct Trust {
  Func func = Func::ALL_REDUCE;
  const ValidatedCase* table = nullptr;
  const ValidatedCase* fallback = nullptr;  // no table of `func`: the all-reduce table used beside `worst`
  const ValidatedCase* worst = nullptr;     // no table of `func`: that collective's worst one-node table
  bool leaves = false;
  double base = 0, grown = 0, error = 0;
  double base_small = 0, error_small = 0;
  double base_mid = 0, error_mid = 0;
  double base_big = 0, error_big = 0;
  std::string held_out;
  // The error to expect in a size class, and for a call of `nccl_tests_bytes`.
  double error_in(SizeClass k) const {
    return k == SizeClass::SMALL ? error_small : k == SizeClass::MID ? error_mid : error_big;
  }
  double at(double nccl_tests_bytes) const { return error_in(size_class(nccl_tests_bytes)); }
};
Trust trust(const std::string& cluster, const std::string& gpu, int nodes, const std::string& net_plugin,
            Func func = Func::ALL_REDUCE);

// One line for --explain and the run report: the closest table of `func`, its node count and its
// error, and what differs from the prediction asked for (another preset, another node count), with
// the held-out figure where that is worse; says so when nothing comparable was validated, and what
// stands in.
std::string trust_line(const std::string& cluster, const std::string& gpu, int nodes,
                       const std::string& net_plugin = "", Func func = Func::ALL_REDUCE);

// trust_line's clauses, in its order (it joins them with "; ", join_trust_parts): the table (or what
// stands in for a missing one, each in its own clause), then the held-out growth where that is
// worse. The run report's text prints one clause a line; `allreduce_above` (a text that lists the
// all-reduce's table before this collective's) names the all-reduce's stand-in table instead of
// repeating it.
std::vector<std::string> trust_parts(const std::string& cluster, const std::string& gpu, int nodes,
                                     const std::string& net_plugin = "", Func func = Func::ALL_REDUCE,
                                     bool allreduce_above = false);
std::string join_trust_parts(const std::vector<std::string>& parts);

}  // namespace ddpsim::collectives
