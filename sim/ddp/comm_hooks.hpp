#pragma once
// What a DDP communication hook does to one bucket, as kernels and collectives
// (torch/distributed/algorithms/ddp_comm_hooks/{default_hooks,powerSGD_hook,quantization_hooks}.py).
#include <string>
#include <vector>

#include "config/specs.hpp"
#include "ddp/bucketizer.hpp"
#include "gpu/compute_model.hpp"

namespace ddpsim::ddp {

struct HookOp {
  enum class Kind { KERNEL, ALLREDUCE, ALLGATHER };
  Kind kind = Kind::ALLREDUCE;
  std::string name;
  double bytes = 0;    // ALLREDUCE: bytes reduced; ALLGATHER: bytes each rank contributes (output: world x bytes)
  gpu::Kernel kernel;  // KERNEL: its cost alone
};

struct BucketComm {
  std::vector<HookOp> at_launch;  // kernels the hook runs on the compute stream when the bucket is launched
  std::vector<HookOp> chain;      // collectives and callback kernels, in order, on the bucket's NCCL stream
  double wire_bytes() const;      // bytes all-reduced
  double gathered_bytes() const;  // bytes each rank contributes to all-gathers
  // Bytes one rank sends over a ring for the whole chain: all-reduce 2(N-1)/N x bytes, all-gather
  // (N-1) x its contribution (NCCL's ring; nccl-tests doc/PERFORMANCE.md bus-bandwidth factors).
  double ring_bytes_sent(int world_size) const;
};

struct HookCosts {
  double peak_flops = 0;
  double hbm_bandwidth = 0;
  config::ComputeSettings compute;
  int world_size = 1;  // the process group's size (the quantization hooks gather from every rank)
};

// `active` is false before PowerSGD's start iteration (the hook then does a plain all-reduce).
BucketComm plan_bucket_comm(const Bucket& bucket, const config::ModelSpec& model, const config::DdpSettings& ddp,
                            bool active, const HookCosts& costs);

// PowerSGD's split of a bucket (powerSGD_hook.py: _should_compress): tensors viewed as
// shape[0] x (numel / shape[0]) matrices are compressed when (n + m) * r * min_compression_rate < n * m.
struct PowerSgdSplit {
  double uncompressed_elems = 0;
  double p_elems = 0, q_elems = 0;  // sum n*r and m*r over compressed tensors
  double matmul_flops = 0;          // one of the three n x m x r products, summed (2nmr)
  double compressed_elems = 0;
};
// Channels of quantization_perchannel_hook: the bucket padded with channel_size - n % channel_size
// zeros (a whole extra channel when n is a multiple) and viewed as rows of channel_size.
double quantization_channels(double elems, int channel_size);

PowerSgdSplit powersgd_split(const Bucket& bucket, const config::ModelSpec& model, int rank,
                             double min_compression_rate);

}  // namespace ddpsim::ddp
