// The region tables of aws-ofi-nccl's region tuner, as src/tuner/nccl_ofi_regions.cpp writes them
// at aws/aws-ofi-nccl 2daf7d30 (region_init_internal_p5_p5e, region_init_internal_p5en,
// region_init_internal_p6; the P6 tables by a script over the source's text): per
// platform, ranks per node (nRanks == 8 * nNodes, 2 * nNodes, nNodes) and collective, the regions
// in the source's order with their vertices (bytes, ranks) in linear scale and the extended
// vertices (extend_region) computed the same way. Transcribed mechanically from the source (only
// the C spellings changed); num_vertices is the source's count, checked in the tests. A platform,
// ranks per node or collective the source gives no regions has none here: NCCL's own tuner picks.
// NCCL_ALGO_PAT regions (p5en and p5 at 1 rank per node) have no algo: ddpsim does not model PAT.
#include "collectives/net_plugin.hpp"

namespace ddpsim::collectives {

// Named (not anonymous): unity builds put this file beside net_plugin.cpp's aws_ofi_detail.
namespace aws_ofi_tables {

constexpr double kTunerMaxRanks = kAwsOfiTunerMaxRanks;
constexpr double kTunerMaxSize = kAwsOfiTunerMaxSize;
const TunerPoint kZ{kTunerMaxSize, kTunerMaxRanks};

// ---- region_init_internal_p5_p5e ----
// nRanks == 8 * nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p5_8pn_allreduce() {
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({402653184, 2048}, {402653184, 4096}, kZ);

  const TunerPoint extended_nvlstree_simple_1 = aws_ofi_extend_region({8053063680, 160}, {9663676416, 192}, kZ);

  const TunerPoint extended_nvlstree_simple_2 = aws_ofi_extend_region({402653184, 2048}, {402653184, 4096}, kZ);

  const TunerPoint extended_ring_simple = aws_ofi_extend_region({8053063680, 160}, {9663676416, 192}, kZ);

  return {{.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 12,
           .vertices = {{0, 16},
                        {31457280, 16},
                        {37748736, 32},
                        {117440512, 64},
                        {301989888, 128},
                        {301989888, 256},
                        {335544320, 512},
                        {536870912, 1024},
                        {402653184, 2048},
                        {402653184, 4096},
                        extended_tree_ll128,
                        {0, extended_tree_ll128.y}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 3,
           .vertices = {{31457281, 16}, {kTunerMaxSize, 16}, {31457281, 16}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 11,
           .vertices = {{31457280, 17},
                        {1073741824, 17},
                        {2147483648, 64},
                        {2147483648, 128},
                        {1342177280, 160},
                        {2147483648, 256},
                        {1074790400, 256},
                        {444596224, 160},
                        {301989888, 128},
                        {117440512, 64},
                        {37748736, 32}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 17,
           .vertices = {{2147483648, 128},
                        {6442450944, 128},
                        {8053063680, 160},
                        {9663676416, 192},
                        extended_nvlstree_simple_1,
                        extended_nvlstree_simple_2,
                        {402653184, 4096},
                        {402653184, 2048},
                        {536870912, 1024},
                        {335544320, 512},
                        {301989888, 256},
                        {310378496, 160},
                        {444596224, 160},
                        {1074790400, 256},
                        {2684354560, 256},
                        {2147483648, 224},
                        {1342177280, 160}}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {{1073741824, 17},
                        {extended_ring_simple.x, 17},
                        extended_ring_simple,
                        {9663676416, 192},
                        {8053063680, 160},
                        {2684354560, 64},
                        {1610612736, 32}}}};
}

// nRanks == 2 * nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p5_2pn_allreduce() {
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({88160256, 128}, {178163712, 256}, kZ);

  const TunerPoint extended_tree_simple_1 = aws_ofi_extend_region({787480576, 128}, {1073741824, 256}, kZ);

  const TunerPoint extended_tree_simple_2 = aws_ofi_extend_region({257114112, 128}, {269484032, 256}, kZ);

  const TunerPoint extended_nvlstree_simple = aws_ofi_extend_region({787480576, 128}, {1073741824, 256}, kZ);

  return {{.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 11,
           .vertices = {{0, 4},
                        {1314816, 4},
                        {1051648, 8},
                        {1051648, 12},
                        {2367488, 16},
                        {5525504, 32},
                        {9473024, 64},
                        {88160256, 128},
                        {178163712, 256},
                        extended_tree_ll128,
                        {0, extended_tree_ll128.y}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 14,
           .vertices = {{1314816, 4},
                        {19736576, 4},
                        {41842688, 8},
                        {296747008, 64},
                        {257114112, 128},
                        {269484032, 256},
                        {178163712, 256},
                        {88160256, 128},
                        {9473024, 64},
                        {5525504, 32},
                        {2367488, 16},
                        {1051648, 12},
                        {1051648, 8},
                        {1314816, 4}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 6,
           .vertices = {{19736576, 4}, {81844224, 4}, {275775488, 8}, {275775488, 48}, {296747008, 64}, {41842688, 8}}},
          {.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 3,
           .vertices = {{81844224, 4}, {269484032, 4}, {81844224, 4}}},
          {.algo = Algo::TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 3,
           .vertices = {{269484032, 4}, {kTunerMaxSize, 4}, {269484032, 4}}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 10,
           .vertices = {{81844224, 5},
                        {kTunerMaxSize, 5},
                        {kTunerMaxSize, 32},
                        {1073741824, 40},
                        {1073741824, 128},
                        {787480576, 128},
                        {296747008, 64},
                        {275775488, 48},
                        {275775488, 8},
                        {81844224, 5}}},
          {.algo = Algo::TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {{296747008, 64},
                        {787480576, 128},
                        {1073741824, 256},
                        extended_tree_simple_1,
                        extended_tree_simple_2,
                        {269484032, 256},
                        {257114112, 128}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 6,
           .vertices = {extended_nvlstree_simple,
                        {1073741824, 256},
                        {787480576, 128},
                        {1073741824, 128},
                        {1073741824, 40},
                        {kTunerMaxSize, 32}}}};
}

// nRanks == nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p5_1pn_allreduce() {
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({9999360, 64}, {119477248, 128}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({4736000, 2}, {269484032, 128}, kZ);

  return {
      {.algo = Algo::TREE,
       .proto = Proto::LL128,
       .num_vertices = 6,
       .vertices = {{0, 16}, {2367488, 16}, {9999360, 64}, {119477248, 128}, extended_tree_ll128, {0, kTunerMaxRanks}}},
      {.algo = Algo::RING,
       .proto = Proto::LL128,
       .num_vertices = 9,
       .vertices = {{0, 2},
                    {4736000, 2},
                    {269484032, 128},
                    extended_ring_ll128,
                    extended_tree_ll128,
                    {119477248, 128},
                    {9999360, 64},
                    {2367488, 16},
                    {0, 16}}},
      {.algo = Algo::RING,
       .proto = Proto::SIMPLE,
       .num_vertices = 4,
       .vertices = {{4736000, 2}, {kTunerMaxSize, 2}, extended_ring_ll128, {269484032, 128}}}};
}

// nRanks == nNodes, ncclFuncAllGather
std::vector<AwsOfiRegion> p5_1pn_allgather() {
  const TunerPoint extended_ring_simple = aws_ofi_extend_region({4194304, 2}, {8589934592, 2048}, kZ);

  return {{.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 4,
           .vertices = {{4194304, 2}, {kTunerMaxSize, 2}, extended_ring_simple, {8589934592, 2048}}}};
}

// nRanks == nNodes, ncclFuncReduceScatter
std::vector<AwsOfiRegion> p5_1pn_reducescatter() {
  const TunerPoint extended_ring_simple = aws_ofi_extend_region({8388608, 2}, {4294967296, 1024}, kZ);

  return {{.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 4,
           .vertices = {{8388608, 2}, {kTunerMaxSize, 2}, extended_ring_simple, {4294967296, 1024}}}};
}

// ---- region_init_internal_p5en ----
// nRanks == 8 * nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p5en_8pn_allreduce() {
  const TunerPoint extended_tree_ll = aws_ofi_extend_region({196608, 192}, {196608, 1024}, kZ);
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({129499136, 127}, {218103808, 1024}, kZ);
  const TunerPoint extended_nvlstree_simple = aws_ofi_extend_region({7516192768, 256}, {17179869184, 448}, kZ);

  return {{.algo = Algo::TREE,
           .proto = Proto::LL,
           .num_vertices = 5,
           .vertices = {{0, 16}, {196608, 16}, {196608, 1024}, extended_tree_ll, {0, kTunerMaxRanks}}},
          {.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 7,
           .vertices = {extended_tree_ll,
                        {196608, 1024},
                        {196608, 16},
                        {13107200, 16},
                        {129499136, 127},
                        {218103808, 1024},
                        extended_tree_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 6,
           .vertices =
               {{129499136, 127}, {13107200, 16}, {29884416, 16}, {293601280, 32}, {589299712, 64}, {549453824, 128}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 12,
           .vertices = {extended_tree_ll128,
                        {218103808, 1024},
                        {129499136, 127},
                        {549453824, 128},
                        {589299712, 64},
                        {293601280, 32},
                        {29884416, 16},
                        {kTunerMaxSize, 16},
                        {509607936, 32},
                        {7516192768, 256},
                        {17179869184, 448},
                        extended_nvlstree_simple}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {
               extended_nvlstree_simple, {17179869184, 448}, {7516192768, 256}, {509607936, 32}, {kTunerMaxSize, 16}}}};
}

// nRanks == 8 * nNodes, ncclFuncAllGather
std::vector<AwsOfiRegion> p5en_8pn_allgather() {
  const TunerPoint extended_ring_ll = aws_ofi_extend_region({28305408, 768}, {33554432, 1024}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({7247754240, 384}, {17179865088, 896}, kZ);

  return {{.algo = Algo::RING,
           .proto = Proto::LL,
           .num_vertices = 9,
           .vertices = {{0, 16},
                        {786432, 16},
                        {4718592, 128},
                        {13630464, 384},
                        {19922944, 512},
                        {28305408, 768},
                        {33554432, 1024},
                        extended_ring_ll,
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 12,
           .vertices = {extended_ring_ll,
                        {33554432, 1024},
                        {28305408, 768},
                        {19922944, 512},
                        {13630464, 384},
                        {4718592, 128},
                        {786432, 16},
                        {236978176, 16},
                        {956301312, 64},
                        {7247754240, 384},
                        {17179865088, 896},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {extended_ring_ll128,
                        {17179865088, 896},
                        {7247754240, 384},
                        {956301312, 64},
                        {494927872, 32},
                        {236978176, 16},
                        {kTunerMaxSize, 16}}}};
}

// nRanks == 8 * nNodes, ncclFuncReduceScatter
std::vector<AwsOfiRegion> p5en_8pn_reducescatter() {
  const TunerPoint extended_ring_ll = aws_ofi_extend_region({7340032, 256}, {18874368, 512}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({7247757312, 256}, {17179869184, 640}, kZ);

  return {{.algo = Algo::RING,
           .proto = Proto::LL,
           .num_vertices = 7,
           .vertices = {{0, 16},
                        {786432, 16},
                        {4718592, 128},
                        {7340032, 256},
                        {18874368, 512},
                        extended_ring_ll,
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 11,
           .vertices = {extended_ring_ll,
                        {18874368, 512},
                        {7340032, 256},
                        {4718592, 128},
                        {786432, 16},
                        {291504128, 16},
                        {589299712, 32},
                        {2415919104, 128},
                        {7247757312, 256},
                        {17179869184, 640},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {extended_ring_ll128,
                        {17179869184, 640},
                        {7247757312, 256},
                        {2415919104, 128},
                        {589299712, 32},
                        {291504128, 16},
                        {kTunerMaxSize, 16}}}};
}

// nRanks == nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p5en_1pn_allreduce() {
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({524288, 8}, {1048576, 96}, kZ);
  const TunerPoint extended_tree_simple = aws_ofi_extend_region({8388608, 32}, {33554432, 128}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({50331648, 16}, {301989888, 128}, kZ);

  return {
      {.algo = Algo::TREE,
       .proto = Proto::LL,
       .num_vertices = 4,
       .vertices = {{0, 2}, {65536, 2}, {65536, 64}, {65536, kTunerMaxRanks}}},
      {.algo = Algo::TREE,
       .proto = Proto::LL128,
       .num_vertices = 11,
       .vertices = {{65536, kTunerMaxRanks},
                    {65536, 64},
                    {65536, 2},
                    {262144, 2},
                    {1048576, 4},
                    {4194304, 8},
                    {16777216, 16},
                    {33554432, 32},
                    {1048576, 32},
                    {1048576, 96},
                    extended_tree_ll128}},
      {.algo = Algo::TREE,
       .proto = Proto::SIMPLE,
       .num_vertices = 6,
       .vertices =
           {extended_tree_ll128, {1048576, 96}, {1048577, 32}, {33554431, 32}, {33554432, 128}, extended_tree_simple}},
      {.algo = Algo::RING,
       .proto = Proto::LL128,
       .num_vertices = 11,
       .vertices = {extended_tree_simple,
                    {33554432, 128},
                    {33554433, 32},
                    {16777217, 16},
                    {4194305, 8},
                    {1048577, 4},
                    {262144, 2},
                    {6291456, 2},
                    {50331648, 16},
                    {301989888, 128},
                    extended_ring_ll128}},
      {.algo = Algo::RING,
       .proto = Proto::SIMPLE,
       .num_vertices = 5,
       .vertices = {extended_ring_ll128, {301989888, 128}, {50331648, 16}, {6291456, 2}, {kTunerMaxSize, 2}}}};
}

// nRanks == nNodes, ncclFuncAllGather
std::vector<AwsOfiRegion> p5en_1pn_allgather() {
  const TunerPoint extended_pat_simple = aws_ofi_extend_region({50331648, 64}, {117440512, 128}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({50331648, 16}, {301989888, 128}, kZ);

  return {{.algo = std::nullopt,
           .proto = Proto::SIMPLE,
           .num_vertices = 12,
           .vertices = {{0, 2},
                        {65536, 2},
                        {1048576, 2},
                        {8388608, 8},
                        {16777216, 16},
                        {16777216, 32},
                        {50331648, 64},
                        {117440512, 128},
                        extended_pat_simple,
                        {kTunerMaxSize, kTunerMaxRanks},
                        {65536, kTunerMaxRanks},
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 11,
           .vertices = {extended_pat_simple,
                        {117440512, 128},
                        {50331648, 64},
                        {16777216, 32},
                        {16777217, 16},
                        {8388609, 8},
                        {1048576, 2},
                        {4194304, 2},
                        {50331648, 16},
                        {301989888, 128},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {extended_ring_ll128, {301989888, 128}, {50331648, 16}, {4194304, 2}, {kTunerMaxSize, 2}}}};
}

// nRanks == nNodes, ncclFuncReduceScatter
std::vector<AwsOfiRegion> p5en_1pn_reducescatter() {
  const TunerPoint extended_pat_simple = aws_ofi_extend_region({50331648, 64}, {117440512, 128}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({50331648, 16}, {301989888, 128}, kZ);
  return {{.algo = std::nullopt,
           .proto = Proto::SIMPLE,
           .num_vertices = 10,
           .vertices = {{0, 2},
                        {65536, 2},
                        {1048576, 2},
                        {16777216, 32},
                        {50331648, 64},
                        {117440512, 128},
                        extended_pat_simple,
                        {kTunerMaxSize, kTunerMaxRanks},
                        {65536, kTunerMaxRanks},
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 9,
           .vertices = {extended_pat_simple,
                        {117440512, 128},
                        {50331648, 64},
                        {16777216, 32},
                        {1048576, 2},
                        {4194304, 2},
                        {50331648, 16},
                        {301989888, 128},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {extended_ring_ll128, {301989888, 128}, {50331648, 16}, {4194304, 2}, {kTunerMaxSize, 2}}}};
}

// ---- region_init_internal_p6 (aws-ofi-nccl 1.16.0+; p6-b200.48xlarge) ----
// nRanks == 8 * nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p6_8pn_allreduce() {
  const TunerPoint extended_tree_ll = aws_ofi_extend_region({393216, 16}, {393216, 1024}, kZ);
  const TunerPoint extended_tree_ll128 = aws_ofi_extend_region({96993280, 1024}, {106430464, 2048}, kZ);
  const TunerPoint extended_nvlstree_simple = aws_ofi_extend_region({10737418240, 512}, {34359738368, 1500}, kZ);
  return {{.algo = Algo::TREE,
           .proto = Proto::LL,
           .num_vertices = 4,
           .vertices = {{0, 16}, {393216, 16}, extended_tree_ll, {0, kTunerMaxRanks}}},
          {.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 10,
           .vertices = {extended_tree_ll,
                        {393216, 16},
                        {4718592, 16},
                        {18350080, 32},
                        {40370176, 64},
                        {57147392, 128},
                        {72876032, 256},
                        {96993280, 1024},
                        {106430464, 2048},
                        extended_tree_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 5,
           .vertices = {{90701824, 128}, {50855936, 64}, {18350080, 32}, {133693440, 32}, {120061952, 64}}},
          {.algo = Algo::NVLS_TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 19,
           .vertices = {extended_tree_ll128,
                        {106430464, 2048},
                        {96993280, 1024},
                        {72876032, 256},
                        {57147392, 128},
                        {40370176, 64},
                        {18350080, 32},
                        {50855936, 64},
                        {90701824, 128},
                        {120061952, 64},
                        {133693440, 32},
                        {18350080, 32},
                        {4718592, 16},
                        {kTunerMaxSize, 16},
                        {435159040, 32},
                        {1072693248, 64},
                        {10737418240, 512},
                        {34359738368, 1500},
                        extended_nvlstree_simple}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {
               extended_nvlstree_simple, {10737418240, 512}, {1072693248, 64}, {435159040, 32}, {kTunerMaxSize, 16}}}};
}

// nRanks == 8 * nNodes, ncclFuncAllGather
std::vector<AwsOfiRegion> p6_8pn_allgather() {
  const TunerPoint extended_ring_ll = aws_ofi_extend_region({74973184, 1024}, {213385216, 2048}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({8321499136, 512}, {32212254720, 2048}, kZ);
  return {{.algo = Algo::RING,
           .proto = Proto::LL,
           .num_vertices = 10,
           .vertices = {{0, 16},
                        {786432, 16},
                        {1572864, 32},
                        {2621440, 64},
                        {4718592, 128},
                        {17301504, 256},
                        {74973184, 1024},
                        {213385216, 2048},
                        extended_ring_ll,
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 14,
           .vertices = {extended_ring_ll,
                        {213385216, 2048},
                        {74973184, 1024},
                        {17301504, 256},
                        {4718592, 128},
                        {2621440, 64},
                        {1572864, 32},
                        {786432, 16},
                        {198705152, 16},
                        {456130560, 32},
                        {871366656, 64},
                        {8321499136, 512},
                        {32212254720, 2048},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {extended_ring_ll128,
                        {32212254720, 2048},
                        {8321499136, 512},
                        {871366656, 64},
                        {456130560, 32},
                        {198705152, 16},
                        {kTunerMaxSize, 16}}}};
}

// nRanks == 8 * nNodes, ncclFuncReduceScatter
std::vector<AwsOfiRegion> p6_8pn_reducescatter() {
  const TunerPoint extended_ring_ll = aws_ofi_extend_region({73924608, 1024}, {209190912, 2048}, kZ);
  const TunerPoint extended_ring_ll128 = aws_ofi_extend_region({4294967296, 256}, {8589934592, 512}, kZ);
  return {{.algo = Algo::RING,
           .proto = Proto::LL,
           .num_vertices = 11,
           .vertices = {{0, 16},
                        {786432, 16},
                        {1572864, 32},
                        {2621440, 64},
                        {4718592, 128},
                        {17301504, 256},
                        {35127296, 512},
                        {73924608, 1024},
                        {209190912, 2048},
                        extended_ring_ll,
                        {0, kTunerMaxRanks}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 15,
           .vertices = {extended_ring_ll,
                        {209190912, 2048},
                        {73924608, 1024},
                        {35127296, 512},
                        {17301504, 256},
                        {4718592, 128},
                        {2621440, 64},
                        {1572864, 32},
                        {786432, 16},
                        {219676672, 16},
                        {508559360, 32},
                        {592445440, 64},
                        {4294967296, 256},
                        {8589934592, 512},
                        extended_ring_ll128}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 7,
           .vertices = {extended_ring_ll128,
                        {8589934592, 512},
                        {4294967296, 256},
                        {592445440, 64},
                        {508559360, 32},
                        {219676672, 16},
                        {kTunerMaxSize, 16}}}};
}

// nRanks == nNodes, ncclFuncAllReduce
std::vector<AwsOfiRegion> p6_1pn_allreduce() {
  return {{.algo = Algo::TREE,
           .proto = Proto::LL,
           .num_vertices = 5,
           .vertices = {{0, 2}, {32768, 2}, {32768, 128}, {32768, 131072}, {0, 131072}}},
          {.algo = Algo::TREE,
           .proto = Proto::LL128,
           .num_vertices = 6,
           .vertices = {{32768, 2}, {131072, 2}, {8388608, 128}, {8589934592, 131072}, {32768, 131072}, {32768, 128}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 8,
           .vertices = {{131072, 2},
                        {3145728, 2},
                        {297795584, 128},
                        {107374182400, 45916},
                        {107374182400, 59831},
                        {164626432, 128},
                        {20971520, 48},
                        {3145728, 48}}},
          {.algo = Algo::TREE,
           .proto = Proto::SIMPLE,
           .num_vertices = 6,
           .vertices = {{3145728, 48},
                        {20971520, 48},
                        {164626432, 128},
                        {107374182400, 59831},
                        {107374182400, 131072},
                        {8589934592, 131072}}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 4,
           .vertices = {{3145728, 2}, {107374182400, 2}, {107374182400, 45916}, {297795584, 128}}}};
}

// nRanks == nNodes, ncclFuncAllGather
std::vector<AwsOfiRegion> p6_1pn_allgather() {
  return {{.algo = Algo::RING, .proto = Proto::LL, .num_vertices = 3, .vertices = {{0, 2}, {65536, 2}, {65536, 4}}},
          {.algo = std::nullopt,
           .proto = Proto::SIMPLE,
           .num_vertices = 9,
           .vertices = {{0, 2},
                        {65536, 4},
                        {1048576, 4},
                        {4194305, 16},
                        {12582912, 48},
                        {88080384, 48},
                        {248512512, 128},
                        {34359738368, 17137},
                        {0, 131072}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 12,
           .vertices = {{65536, 2},
                        {2097152, 2},
                        {16777216, 8},
                        {291504128, 128},
                        {34359738368, 15008},
                        {34359738368, 17137},
                        {248512512, 128},
                        {88080384, 48},
                        {12582912, 48},
                        {4194305, 16},
                        {1048576, 4},
                        {65536, 4}}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {{2097152, 2}, {34359738368, 2}, {34359738368, 15008}, {291504128, 128}, {16777216, 8}}}};
}

// nRanks == nNodes, ncclFuncReduceScatter
std::vector<AwsOfiRegion> p6_1pn_reducescatter() {
  return {{.algo = Algo::RING, .proto = Proto::LL, .num_vertices = 3, .vertices = {{0, 2}, {65536, 2}, {65536, 4}}},
          {.algo = std::nullopt,
           .proto = Proto::SIMPLE,
           .num_vertices = 9,
           .vertices = {{0, 2},
                        {65536, 4},
                        {1048576, 4},
                        {3345192, 8},
                        {19065019, 16},
                        {67108864, 48},
                        {106954752, 48},
                        {274877906944, 121928},
                        {0, 131072}}},
          {.algo = Algo::RING,
           .proto = Proto::LL128,
           .num_vertices = 9,
           .vertices = {{65536, 2},
                        {2097152, 2},
                        {16777216, 8},
                        {106954752, 48},
                        {67108864, 48},
                        {19065019, 16},
                        {3345192, 8},
                        {1048576, 4},
                        {65536, 4}}},
          {.algo = Algo::RING,
           .proto = Proto::SIMPLE,
           .num_vertices = 5,
           .vertices = {{2097152, 2}, {274877906944, 2}, {274877906944, 121928}, {106954752, 48}, {16777216, 8}}}};
}

}  // namespace aws_ofi_tables

const std::vector<AwsOfiRegion>& aws_ofi_regions(NetPlugin p, Func func, int nranks, int nnodes) {
  static const std::vector<AwsOfiRegion> none;
  if (nnodes < 1) return none;
  // region_init_internal_p5_p5e: 8 ranks per node all-reduce; 2 per node all-reduce; 1 per node
  // all-reduce, all-gather, reduce-scatter; any other count: "Fall back to NCCL's tuner, so no regions".
  static const std::vector<AwsOfiRegion> p5_8_ar = aws_ofi_tables::p5_8pn_allreduce(),
                                         p5_2_ar = aws_ofi_tables::p5_2pn_allreduce(),
                                         p5_1_ar = aws_ofi_tables::p5_1pn_allreduce(),
                                         p5_1_ag = aws_ofi_tables::p5_1pn_allgather(),
                                         p5_1_rs = aws_ofi_tables::p5_1pn_reducescatter();
  // region_init_internal_p5en: 8 ranks per node and 1 per node, each all-reduce, all-gather,
  // reduce-scatter; no regions at 2 ranks per node.
  static const std::vector<AwsOfiRegion> p5en_8_ar = aws_ofi_tables::p5en_8pn_allreduce(),
                                         p5en_8_ag = aws_ofi_tables::p5en_8pn_allgather(),
                                         p5en_8_rs = aws_ofi_tables::p5en_8pn_reducescatter(),
                                         p5en_1_ar = aws_ofi_tables::p5en_1pn_allreduce(),
                                         p5en_1_ag = aws_ofi_tables::p5en_1pn_allgather(),
                                         p5en_1_rs = aws_ofi_tables::p5en_1pn_reducescatter();
  // region_init_internal_p6: 8 ranks per node and 1 per node, each all-reduce, all-gather,
  // reduce-scatter (PAT at 1 per node); none at 2 ranks per node.
  static const std::vector<AwsOfiRegion> p6_8_ar = aws_ofi_tables::p6_8pn_allreduce(),
                                         p6_8_ag = aws_ofi_tables::p6_8pn_allgather(),
                                         p6_8_rs = aws_ofi_tables::p6_8pn_reducescatter(),
                                         p6_1_ar = aws_ofi_tables::p6_1pn_allreduce(),
                                         p6_1_ag = aws_ofi_tables::p6_1pn_allgather(),
                                         p6_1_rs = aws_ofi_tables::p6_1pn_reducescatter();
  const bool eight = nranks == 8 * nnodes, two = nranks == 2 * nnodes, one = nranks == nnodes;
  const auto pick = [&](const std::vector<AwsOfiRegion>& ar, const std::vector<AwsOfiRegion>& ag,
                        const std::vector<AwsOfiRegion>& rs) -> const std::vector<AwsOfiRegion>& {
    return func == Func::ALL_REDUCE ? ar : func == Func::ALL_GATHER ? ag : func == Func::REDUCE_SCATTER ? rs : none;
  };
  if (p == NetPlugin::AWS_OFI_P5) {
    if (eight) return pick(p5_8_ar, none, none);
    if (two) return pick(p5_2_ar, none, none);
    if (one) return pick(p5_1_ar, p5_1_ag, p5_1_rs);
  } else if (p == NetPlugin::AWS_OFI_P5EN) {
    if (eight) return pick(p5en_8_ar, p5en_8_ag, p5en_8_rs);
    if (one) return pick(p5en_1_ar, p5en_1_ag, p5en_1_rs);
  } else if (p == NetPlugin::AWS_OFI_P6) {
    if (eight) return pick(p6_8_ar, p6_8_ag, p6_8_rs);
    if (one) return pick(p6_1_ar, p6_1_ag, p6_1_rs);
  }
  return none;
}

}  // namespace ddpsim::collectives
