// nccl-tests-compatible ncclAllReduce sweep (float, sum), out-of-place then in-place per size.
#include <cstdio>
#include <mutex>

#include "commands.hpp"
#include "kernels.hpp"
#include "stats.hpp"

namespace ddpbench {

void cmd_allreduce(const AllreduceArgs& a, const Command& cmd) {
  const int ngpus = resolve_ngpus(a.ngpus);
  const HardwareInfo hw = query_hardware(ngpus);
  const auto sizes = sweep_sizes(a.min_bytes, a.max_bytes, a.step_factor, sizeof(float));
  const uint64_t max_bytes = sizes.empty() ? 0 : sizes.back();
  {
    size_t free_b = 0, total_b = 0;
    CUDACHECK(cudaSetDevice(0));
    CUDACHECK(cudaMemGetInfo(&free_b, &total_b));
    if (2 * max_bytes + (256ULL << 20) > free_b)
      throw ArgError("-e: " + std::to_string(max_bytes) + " bytes needs two buffers of that size but GPU 0 has " +
                     std::to_string(free_b) + " bytes free; choose a smaller -e");
  }
  std::printf("# ddpbench allreduce (nccl-tests all_reduce_perf format)\n");
  std::printf(
      "# nThread 1 nGpus %d minBytes %lu maxBytes %lu step: %g(factor) warmup iters: %d iters: %d agg iters: 1 "
      "validation: %d\n",
      ngpus, static_cast<unsigned long>(a.min_bytes), static_cast<unsigned long>(a.max_bytes), a.step_factor,
      a.timing.warmup, a.timing.iters, a.check ? 1 : 0);
  std::printf(
      "# time = median over the timed iterations of per-call cudaEvent time (nccl-tests: the mean); averaged over "
      "ranks\n");
  std::printf("#\n# Using devices\n");
  for (int i = 0; i < ngpus; ++i) {
    cudaDeviceProp p{};
    CUDACHECK(cudaGetDeviceProperties(&p, i));
    std::printf("#  Rank %2d Device %2d [%s] %s\n", i, i, hw.pci_bus_ids[static_cast<size_t>(i)].c_str(), p.name);
  }
  std::printf("#\n%s", nccl_tests_header().c_str());
  std::fflush(stdout);

  std::vector<AllreduceRow> rows;
  run_on_gpus(ngpus, [&](GpuContext& ctx, RankGroup& group) {
    DeviceBuffer send(std::max<uint64_t>(max_bytes, 16)), recv(std::max<uint64_t>(max_bytes, 16));
    DeviceBuffer wrong(sizeof(unsigned long long));
    launch_fill(send.get(), send.bytes(), ctx.comm);
    for (uint64_t bytes : sizes) {
      const size_t count = bytes / sizeof(float);
      AllreduceRow row;
      row.bytes = bytes;
      row.count = count;
      for (int in_place = 0; in_place < 2; ++in_place) {
        void* out = in_place ? send.get() : recv.get();
        group.barrier.arrive_and_wait();
        const auto t = time_iterations(ctx.comm, a.timing.warmup, a.timing.iters, [&] {
          NCCLCHECK(ncclAllReduce(send.get(), out, count, ncclFloat, ncclSum, ctx.nccl, ctx.comm));
        });
        const double sec = group.mean_over_ranks(ctx.rank, median(t));
        AllreduceResult r;
        r.time_s = sec;
        r.algbw_GBps = algbw_GBps(bytes, sec);
        r.busbw_GBps = allreduce_busbw_GBps(bytes, sec, ctx.nranks);
        if (a.check) {
          // Rank i contributes i+1 everywhere: every element must equal n(n+1)/2.
          launch_set(send.as<float>(), static_cast<int64_t>(count), static_cast<float>(ctx.rank + 1), ctx.comm);
          CUDACHECK(cudaMemsetAsync(wrong.get(), 0, sizeof(unsigned long long), ctx.comm));
          NCCLCHECK(ncclAllReduce(send.get(), out, count, ncclFloat, ncclSum, ctx.nccl, ctx.comm));
          const float expected = static_cast<float>(ctx.nranks) * static_cast<float>(ctx.nranks + 1) / 2.0f;
          launch_count_wrong(static_cast<const float*>(out), static_cast<int64_t>(count), expected,
                             wrong.as<unsigned long long>(), ctx.comm);
          unsigned long long w = 0;
          CUDACHECK(cudaMemcpyAsync(&w, wrong.get(), sizeof w, cudaMemcpyDeviceToHost, ctx.comm));
          CUDACHECK(cudaStreamSynchronize(ctx.comm));
          r.wrong = static_cast<int64_t>(group.mean_over_ranks(ctx.rank, static_cast<double>(w)) * ctx.nranks + 0.5);
          launch_fill(send.get(), bytes, ctx.comm);
        }
        if (in_place)
          row.in_place = r;
        else
          row.out_of_place = r;
      }
      if (ctx.rank == 0) {
        rows.push_back(row);
        std::printf("%s\n", nccl_tests_row(row).c_str());
        std::fflush(stdout);
      }
    }
  });
  std::printf("# Out of bounds values : 0 OK\n%s#\n", nccl_tests_footer(rows).c_str());
  ResultsWriter w("allreduce", hw, config_json(cmd));
  for (const auto& r : rows) w.add_allreduce_row(r);
  write_results(w, a.timing.json_path);
}

}  // namespace ddpbench
