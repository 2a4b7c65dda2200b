#pragma once
// Parser for NVIDIA nccl-tests output (src/common.cu, src/util.cu printing), every row layout:
// "size count type redop root time algbw busbw #wrong ...", older without root, oldest without
// redop; 2.19.2+'s -I 1 per-iteration columns and 2.17.6+'s -S 1 timestamps; and the -J JSON
// file. Out-of-place and in-place columns are both kept. NCCL_DEBUG lines ("host:pid:tid [0] NCCL
// INFO ...", "NCCL WARN") are skipped; "NCCL version X.Y.Z" is read.
#include <array>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ddpsim::collectives {

// A line the parser cannot read; the message names file, line number, the text and what was expected.
class NcclLogError : public std::runtime_error {
 public:
  NcclLogError(const std::string& file, int line, const std::string& text, const std::string& expected);
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

struct NcclTestsRow {
  double size_bytes = 0;
  long long count = 0;
  std::string type;
  std::string redop;                                     // empty in the oldest format
  int root = -1;                                         // -1 when the column is absent (or printed as -1)
  double oop_time_us = 0, oop_algbw = 0, oop_busbw = 0;  // GB/s as printed
  double ip_time_us = 0, ip_algbw = 0, ip_busbw = 0;
  std::string oop_wrong, ip_wrong;  // "#wrong" / "error" column verbatim ("0", "N/A", "2e-07")
  // nccl-tests -I 1 (per-iteration CUDA event timing, 2.19.2+): i_min, i_max, i_p99 (us) and
  // i_cv% after each block's #wrong; absent (per_iteration false) otherwise.
  struct IterStats {
    double min_us = 0, max_us = 0, p99_us = 0, cv_pct = 0;
  };
  bool per_iteration = false;
  IterStats oop_iter, ip_iter;
  std::string timestamp;  // nccl-tests -S 1 (2.17.6+): "YYYY-MM-DD HH:MM:SS" at the end of the row; empty otherwise
};

// One run of all_reduce_perf inside a file: a file may hold several (the sizes start over, or a
// new "# nThread .. nGpus .." banner appears).
struct NcclTestsRun {
  size_t first_row = 0, row_count = 0;  // into NcclTestsLog::rows
  int nthread = 0;                      // from the run's banner (0 if absent)
  int ngpus = 0;                        // GPUs per thread: nccl-tests -g (0 if absent)
  int cuda_graph = -1;                  // nccl-tests -G: CUDA graph launches per size, 0 = eager (-1 if absent)
  // nccl-tests -C 1 ("cputime" in the column header): the printed time is the host's time to
  // enqueue a call, not the collective's; the parser replaces each row's times by size / algbw
  // (the bandwidths come from the collective's time) and sets them to 0 (the row is not compared)
  // where algbw is below 1 GB/s, printed with too few digits. `host_time_rows_dropped` counts those.
  bool host_time = false;
  size_t host_time_rows_dropped = 0;
  // nccl-tests -z (blocking collectives): 1 or 2 wait after every call, 3 after every iteration,
  // from the "# Blocking Enabled" banner; 0 = calls back to back.
  int blocking = 0;
  int agg_iters = 0;  // nccl-tests -a: calls per group ("agg iters: N" on the banner; 0 if absent)
  // As CalibrationPoint::cuda_graph takes it: 1 replayed from a graph, 0 eager, -1 not stated.
  int graph_mode() const { return cuda_graph < 0 ? -1 : cuda_graph > 0; }
};

struct NcclTestsLog {
  std::string filename;
  std::vector<NcclTestsRow> rows;
  std::vector<NcclTestsRun> runs;
  int nthread = 0;  // "# nThread 1 nGpus 8 ..." (0 if absent; the last banner seen)
  int ngpus = 0;
  int cuda_graph = -1;  // "graph: N" on that banner line (nccl-tests -G; -1 if absent)
  int agg_iters = 0;    // "agg iters: N" on that banner line (nccl-tests -a; 0 if absent)
  // NCCL_VERSION_CODE from a "NCCL version 2.8.3" line (NCCL_DEBUG=INFO output or a '#' comment);
  // 0 if the file does not say.
  int nccl_version = 0;
  // aws-ofi-nccl's release from its NCCL_DEBUG=INFO line "NET/OFI Initializing aws-ofi-nccl 1.7.4-aws"
  // (major*10000 + minor*100 + patch); 0 if the log does not say.
  int net_plugin_version = 0;
  // "# Collective test starting: all_reduce_perf" (nccl-tests 2.14+); empty if the file does not say.
  std::string test_name;
  std::vector<std::string> devices;       // GPU names from "#  Rank  0 Group ... device  0 [0x07] NAME" lines
  std::vector<double> avg_bus_bandwidth;  // "# Avg bus bandwidth : X" (one per run in the file)
  std::vector<std::string> device_hosts;  // the host of each device line ("on pod01"), same order
  int nranks() const { return static_cast<int>(devices.size()); }  // 0 if the banner had no device lines
  // {hosts, ranks on each} when the device lines name every rank's host and each host has as many
  // ranks; nullopt otherwise (no device lines, uneven hosts).
  std::optional<std::array<int, 2>> hosts_by_ranks() const;
  // Ranks implied by the printed bandwidths: all-reduce busbw/algbw = 2(n-1)/n (nccl-tests
  // PERFORMANCE.md), read on the row with the largest algbw (most printed digits); 0 if no row
  // has algbw >= 1 GB/s or the ratio matches no whole n. one_phase: all-gather / reduce-scatter,
  // busbw/algbw = (n-1)/n.
  int nranks_from_bandwidths(bool one_phase = false) const;
};

// Which nccl-tests binary wrote the log: its "# Collective test starting: NAME" line (nccl-tests
// 2.14+; an "_mpi" build's name without the suffix), else read from its rows: busbw/algbw >= 1 is
// all-reduce's 2(n-1)/n, < 1 the (n-1)/n of all-gather and reduce-scatter (src/all_reduce.cu,
// all_gather.cu, reduce_scatter.cu *GetBw), told apart by the redop column ("none" for
// all_gather_perf, the reduction for reduce_scatter_perf); a rooted row (root >= 0) with redop
// "none" is broadcast_perf's. "" when the log does not say: no name, no row with algbw >= 1 GB/s,
// another rooted test (reduce_perf, or no redop column), or the oldest row layout (no redop
// column) with a ratio below 1. Without a name, alltoall_perf output reads as all_gather_perf.
std::string nccl_test_of(const NcclTestsLog& log);

NcclTestsLog parse_nccl_tests_log(std::istream& in, const std::string& filename);

// The JSON file nccl-tests -J writes (src/util.cu, JSON_FILE_VERSION 3, nccl-tests 2.17.3+): one run,
// its config (nthreads, ngpus, graph, devices), nccl_version and results. Keys the model does not
// use are ignored (nccl-tests adds keys); a missing or mistyped key it needs is a core::ConfigError
// naming the file and JSON path.
NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& filename);

// What a user should know before reading a comparison with this log (times taken from algbw,
// blocking calls), one line each without the "warning: " prefix.
std::vector<std::string> log_warnings(const NcclTestsLog& log);

// The line patterns the parser looks for, matched by hand in one pass each (std::regex took most
// of the parse time). Each is written against the ECMAScript pattern in its comment and unit-
// tested against that pattern with std::regex on real and mutated lines; \s is [ \t\n\v\f\r],
// \b a boundary between [A-Za-z0-9_] and anything else.
namespace log_match {
// ^\[\d+,\d+\]<(stdout|stderr)>: -- its length, 0 when the line does not start with it.
size_t mpi_prefix(std::string_view s);
// ^ *\d+:  (srun --label) -- its length, 0 when the line does not start with it.
size_t srun_label(std::string_view s);
// ^\[\d+\] (Intel MPI -l / -prepend-rank): the whole "[N]", nullopt otherwise.
std::optional<std::string> bracket_rank(std::string_view s);
// \bNCCL (INFO|WARN|TRACE)\b anywhere.
bool debug_tag(std::string_view s);
// NCCL version\s+(\d+)\.(\d+)\.(\d+): the first match's three groups.
std::optional<std::array<std::string, 3>> version(std::string_view s);
// aws-ofi-nccl\s+(\d+)\.(\d+)\.(\d+): the first match's three groups.
std::optional<std::array<std::string, 3>> ofi_version(std::string_view s);
// nccl-library=(\d{4,6})\b
std::optional<std::string> library_code(std::string_view s);
// Collective test starting:\s*(\S+)
std::optional<std::string> test_name(std::string_view s);
// nThread\s+(\d+)\s+nGpus\s+(\d+)
std::optional<std::array<std::string, 2>> threads(std::string_view s);
// \bgraph:\s*(\d+)   (the banner's "graph: N", nccl-tests -G)
std::optional<std::string> cuda_graph(std::string_view s);
// ^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*?)\s*$:
// the host and the device name.
std::optional<std::array<std::string, 2>> device(std::string_view s);
// ^#\s*Avg bus bandwidth\s*:\s*(\S+)
std::optional<std::string> avg_bus_bandwidth(std::string_view s);
}  // namespace log_match
// A missing, non-regular (/dev/zero, a fifo, a directory) or oversized file is a core::ConfigError.
// A file whose first non-blank character is '{' is read as nccl-tests -J JSON, anything else as
// the text output.
NcclTestsLog parse_nccl_tests_log_file(const std::string& path);

}  // namespace ddpsim::collectives
