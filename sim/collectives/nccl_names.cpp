#include "collectives/nccl_names.hpp"

#include <cctype>
#include <cmath>
#include <stdexcept>

#include "core/text.hpp"

namespace ddpsim::collectives {

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

}  // namespace ddpsim::collectives
