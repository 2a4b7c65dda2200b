#pragma once
// NCCL's names: algorithms, protocols and release versions, as NCCL spells them (NCCL_ALGO,
// NCCL_PROTO, NCCL_VERSION_CODE). They live in config/, which reads them from scenarios and
// clusters; the NCCL model (collectives/, collectives/nccl_names.hpp) takes them from here, so the
// dependency runs one way (collectives -> config). Standard library only.
#include <string>
#include <string_view>
#include <vector>

namespace ddpsim::config {

// COLLNET_*: NCCL's CollNet algorithms (in-network reduction through a CollNet plugin, e.g. SHARP).
enum class Algo { RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN };
enum class Proto { LL, LL128, SIMPLE };

std::string to_string(Algo algo);
std::string to_string(Proto proto);
// Case-insensitive, NCCL spellings ("Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect",
// "CollNetChain", "LL", "LL128", "Simple").
// Throws std::invalid_argument listing the valid names.
Algo parse_algo(std::string_view name);
Proto parse_proto(std::string_view name);
std::vector<std::string> algo_names();   // Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain
std::vector<std::string> proto_names();  // LL, LL128, Simple

// NCCL_ALGO / NCCL_PROTO as NCCL reads them (src/graph/tuning.cc parseList, 2.24+; '^' since
// 2.x): ';'-separated entries, each "list" (the first entry only) or "function:list" with
// function one of Broadcast, Reduce, AllGather, ReduceScatter, AllReduce (case-insensitive); a
// list is comma-separated names to enable, or '^' and the names to disable (the others stay
// enabled). Returns the names enabled for all-reduce, in NCCL's spelling and order, or an empty
// list where no entry applies to all-reduce (NCCL's defaults stay: LL128 on where NCCL enables
// it). Algorithms NCCL knows but all-reduce never runs (PAT) are accepted and left out. Throws
// std::invalid_argument naming the bad token and what is allowed (the caller names the value),
// also when the value enables nothing for all-reduce (NCCL would fail every all-reduce).
std::vector<std::string> allreduce_algos(std::string_view value);   // NCCL_ALGO
std::vector<std::string> allreduce_protos(std::string_view value);  // NCCL_PROTO

// "2.8.3" (also "2.8.3-1", "2.8.3+cuda11.2") -> 20803 (NCCL_VERSION_CODE for 2.x: major*10000 +
// minor*100 + patch). Throws std::invalid_argument naming the text and the expected form.
int parse_nccl_version(std::string_view text);
// Any release code of that form: 20803 -> "2.8.3" (NCCL), 10901 -> "1.9.1" (aws-ofi-nccl); 0 -> "current".
std::string nccl_version_string(int code);
// An aws-ofi-nccl release, "1.7.4" (also "1.7.4-aws") -> 10704 (major*10000 + minor*100 +
// patch); 0 when the text is not MAJOR.MINOR.PATCH with each part in [0, 99].
int aws_ofi_version_code(std::string_view text);

// NCCL_BUFFSIZE (bytes) and NCCL_NTHREADS as ddpsim accepts them: "" when valid, else what is
// allowed. NCCL itself falls back to its default on a bad NCCL_NTHREADS (src/graph/tuning.cc
// getNthreads: a multiple of WARP_SIZE in [2 x WARP_SIZE, NCCL_SIMPLE_MAX_NTHREADS = 512]) and
// does not check NCCL_BUFFSIZE (src/init.cc computeBuffSizes); ddpsim rejects bad values instead.
std::string check_buffsize(double bytes);
std::string check_nthreads(int nthreads);

}  // namespace ddpsim::config
