#include "config/nccl_names.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "core/text.hpp"

namespace ddpsim::config {

using core::to_lower;

int parse_nccl_version(std::string_view text) {
  auto bad = [&] {
    return std::invalid_argument("NCCL version \"" + std::string(text) +
                                 "\" is not of the form MAJOR.MINOR.PATCH with MAJOR 2 (e.g. 2.8.3, 2.18.5)");
  };
  int parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    if (k > 0) {
      if (i >= text.size() || text[i] != '.') throw bad();
      ++i;
    }
    const size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 4)
      parts[k] = parts[k] * 10 + (text[i++] - '0');
    if (i == start) throw bad();
  }
  // Suffixes NCCL prints: "-1" (package release), "+cuda11.2".
  if (i < text.size() && text[i] != '-' && text[i] != '+') throw bad();
  if (parts[0] != 2 || parts[1] > 99 || parts[2] > 99) throw bad();
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

int aws_ofi_version_code(std::string_view text) {
  int part[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    const size_t b = i;
    while (i < text.size() && i - b < 3 && std::isdigit(static_cast<unsigned char>(text[i])))
      part[k] = part[k] * 10 + (text[i++] - '0');
    if (i == b || i - b > 2) return 0;
    if (k < 2) {
      if (i >= text.size() || text[i] != '.') return 0;
      ++i;
    }
  }
  if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) return 0;
  return part[0] * 10000 + part[1] * 100 + part[2];
}

std::string nccl_version_string(int code) {
  if (code == 0) return "current";
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

std::string to_string(Algo algo) {
  switch (algo) {
    case Algo::RING: return "Ring";
    case Algo::TREE: return "Tree";
    case Algo::NVLS: return "NVLS";
    case Algo::NVLS_TREE: return "NVLSTree";
    case Algo::COLLNET_DIRECT: return "CollNetDirect";
    case Algo::COLLNET_CHAIN: return "CollNetChain";
  }
  return "?";
}

std::string to_string(Proto proto) {
  switch (proto) {
    case Proto::LL: return "LL";
    case Proto::LL128: return "LL128";
    case Proto::SIMPLE: return "Simple";
  }
  return "?";
}

Algo parse_algo(std::string_view name) {
  const std::string n = to_lower(name);
  if (n == "ring") return Algo::RING;
  if (n == "tree") return Algo::TREE;
  if (n == "nvls") return Algo::NVLS;
  if (n == "nvlstree" || n == "nvls_tree") return Algo::NVLS_TREE;
  if (n == "collnetdirect") return Algo::COLLNET_DIRECT;
  if (n == "collnetchain") return Algo::COLLNET_CHAIN;
  throw std::invalid_argument("unknown NCCL algorithm \"" + std::string(name) +
                              "\"; valid: Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain");
}

std::vector<std::string> algo_names() { return {"Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect", "CollNetChain"}; }
std::vector<std::string> proto_names() { return {"LL", "LL128", "Simple"}; }

namespace {

// tuning.cc parseList for the AllReduce row. `names`: every token NCCL accepts, in its order;
// `used`: how many of them (the first ones) all-reduce can run.
std::vector<std::string> allreduce_list(std::string_view value, const std::vector<std::string>& names, size_t used,
                                        const char* kind) {
  static const std::vector<std::string> kFuncs = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& n : v) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  auto bad = [&](const std::string& why) { throw std::invalid_argument(why); };
  std::vector<int> enabled;  // per name; empty: no entry applied to all-reduce
  // core::split_list keeps empty pieces ("" is a token NCCL would not know either).
  const auto entries = value.empty() ? std::vector<std::string>{""} : core::split_list(value, ';');
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string_view entry = entries[i], list = entry, func;
    const size_t colon = entry.find(':');
    if (colon != std::string_view::npos) {
      func = entry.substr(0, colon);
      list = entry.substr(colon + 1);
      auto f = std::find_if(kFuncs.begin(), kFuncs.end(), [&](const auto& n) { return to_lower(n) == to_lower(func); });
      if (f == kFuncs.end())
        bad("unknown NCCL function \"" + std::string(func) + "\" before ':'; valid: " + join(kFuncs));
    } else if (i > 0) {
      bad("every entry after the first needs a function prefix (\"AllReduce:...\"), as NCCL requires");
    }
    const bool exclude = !list.empty() && list.front() == '^';
    if (exclude) list.remove_prefix(1);
    std::vector<int> row(names.size(), exclude ? 1 : 0);
    const auto tokens = list.empty() ? std::vector<std::string>{""} : core::split_list(list, ',');
    for (std::string_view tok : tokens) {
      auto n = std::find_if(names.begin(), names.end(), [&](const auto& x) { return to_lower(x) == to_lower(tok); });
      if (n == names.end())
        bad(std::string("unknown NCCL ") + kind + " \"" + std::string(tok) + "\"; valid: " + join(names) +
            " (a comma list, '^' first to disable those listed, ';'-separated \"function:list\" entries)");
      row[n - names.begin()] = exclude ? 0 : 1;
    }
    if (func.empty() || to_lower(func) == "allreduce") enabled = row;
  }
  if (enabled.empty()) return {};
  std::vector<std::string> out;
  for (size_t k = 0; k < used; ++k)
    if (enabled[k]) out.push_back(names[k]);
  if (out.empty()) bad(std::string("enables no ") + kind + " for all-reduce");
  return out;
}

}  // namespace

std::vector<std::string> allreduce_algos(std::string_view value) {
  auto names = algo_names();
  const size_t used = names.size();
  names.push_back("PAT");  // NCCL's PAT (all-gather / reduce-scatter only)
  return allreduce_list(value, names, used, "algorithm");
}

std::vector<std::string> allreduce_protos(std::string_view value) {
  const auto names = proto_names();
  return allreduce_list(value, names, names.size(), "protocol");
}

Proto parse_proto(std::string_view name) {
  const std::string n = to_lower(name);
  if (n == "ll") return Proto::LL;
  if (n == "ll128") return Proto::LL128;
  if (n == "simple") return Proto::SIMPLE;
  throw std::invalid_argument("unknown NCCL protocol \"" + std::string(name) + "\"; valid: LL, LL128, Simple");
}

std::string check_buffsize(double bytes) {
  // ddpsim's bound: whole bytes whose NCCL_STEPS (8) steps stay 512-byte aligned, 64 KiB to 1 GiB
  // (buffSizes[] is an int in NCCL).
  if (!(bytes >= 65536 && bytes <= 1073741824.0 && std::floor(bytes) == bytes && std::fmod(bytes, 4096.0) == 0))
    return "a byte count from 65536 (64 KiB) to 1073741824 (1 GiB), a multiple of 4096 (NCCL's default is 4194304 = "
           "4 MiB)";
  return "";
}

std::string check_nthreads(int nthreads) {
  if (nthreads < 64 || nthreads > 512 || nthreads % 32 != 0)
    return "a multiple of 32 from 64 to 512 (NCCL's getNthreads ignores other values)";
  return "";
}

}  // namespace ddpsim::config
