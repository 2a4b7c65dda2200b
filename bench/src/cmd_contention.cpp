// Compute kernels alone vs beside communication on another stream, and communication alone vs beside
// compute. With >= 2 GPUs the background is an NCCL all-reduce on every rank; with one GPU it is a
// bandwidth-hogging copy kernel with --hog-blocks CTAs (NCCL takes one CTA per channel).
#include <cmath>
#include <cstdio>

#include "commands.hpp"
#include "kernels.hpp"
#include "stats.hpp"

namespace ddpbench {

void cmd_contention(const ContentionArgs& a, const Command& cmd) {
  const int ngpus = resolve_ngpus(a.ngpus);
  const HardwareInfo hw = query_hardware(ngpus);
  const bool use_nccl = ngpus >= 2;
  const int w = a.timing.warmup, n = a.timing.iters;
  std::vector<ContentionRow> rows;
  run_on_gpus(ngpus, [&](GpuContext& ctx, RankGroup& group) {
    LayerRunner runner(ctx, contention_plans(a.dtype), a.dtype, false);
    DeviceBuffer src(a.bytes), dst(use_nccl ? 16 : a.bytes);
    launch_fill(src.get(), a.bytes, ctx.comm);
    const size_t count = a.bytes / sizeof(float);
    auto bg = [&] {
      if (use_nccl)
        NCCLCHECK(ncclAllReduce(src.get(), src.get(), count, ncclFloat, ncclSum, ctx.nccl, ctx.comm));
      else
        launch_hog(src.get(), dst.get(), a.bytes, a.hog_blocks, 1, ctx.comm);
    };
    CUDACHECK(cudaDeviceSynchronize());
    group.barrier.arrive_and_wait();
    const double bg_alone = group.max_over_ranks(ctx.rank, median(time_iterations(ctx.comm, w, n, bg)));
    for (size_t i = 0; i < runner.plans().size(); ++i) {
      const auto& plan = runner.plans()[i];
      auto fg = [&] { runner.forward(i, ctx.compute); };
      const double fg_alone = median(time_iterations(ctx.compute, w, n, fg));
      const double fg_alone_max = group.max_over_ranks(ctx.rank, fg_alone);

      // Compute beside communication: queue enough background work to cover the timed window.
      const double units_f = std::ceil(1.5 * (w + n) * fg_alone_max / std::max(bg_alone, 1e-9)) + 2;
      const int units = static_cast<int>(std::clamp(units_f, 2.0, 400.0));
      CUDACHECK(cudaDeviceSynchronize());
      group.barrier.arrive_and_wait();
      for (int u = 0; u < units; ++u) bg();
      const double fg_beside = median(time_iterations(ctx.compute, w, n, fg));
      CUDACHECK(cudaDeviceSynchronize());

      // Communication beside compute.
      const double fg_units_f = std::ceil(1.5 * (w + n) * bg_alone / std::max(fg_alone_max, 1e-9)) + 2;
      const int fg_units = static_cast<int>(std::clamp(fg_units_f, 2.0, 2000.0));
      group.barrier.arrive_and_wait();
      for (int u = 0; u < fg_units; ++u) fg();
      const double bg_beside = median(time_iterations(ctx.comm, w, n, bg));
      CUDACHECK(cudaDeviceSynchronize());

      const double bg_beside_mean = group.mean_over_ranks(ctx.rank, bg_beside);
      if (ctx.rank == 0) {
        ContentionRow r;
        r.kind = plan.name;
        r.background = use_nccl ? "nccl_allreduce" : "copy_kernel";
        r.note = plan.note +
                 (units_f > 400 || fg_units_f > 2000 ? " (background queue capped: window partly uncovered)" : "");
        r.fg_flops = plan.fwd_flops;
        r.bg_bytes = a.bytes;
        r.fg_alone_s = fg_alone;
        r.fg_beside_s = fg_beside;
        r.bg_alone_s = bg_alone;
        r.bg_beside_s = bg_beside_mean;
        rows.push_back(r);
      }
    }
  });
  std::printf("# ddpbench contention on %d x %s, %s foreground, background %s of %lu bytes%s\n", ngpus,
              hw.gpu_name.c_str(), dtype_name(a.dtype), use_nccl ? "ncclAllReduce" : "copy kernel",
              static_cast<unsigned long>(a.bytes),
              use_nccl ? "" : (" with " + std::to_string(a.hog_blocks) + " CTAs").c_str());
  std::printf("# %-14s %14s %14s %9s %14s %14s %9s\n", "kind", "compute (us)", "+comm (us)", "slowdown", "comm (us)",
              "+compute (us)", "slowdown");
  ResultsWriter wr("contention", hw, config_json(cmd));
  for (const auto& r : rows) {
    std::printf("  %-14s %14.1f %14.1f %9.3f %14.1f %14.1f %9.3f\n", r.kind.c_str(), r.fg_alone_s * 1e6,
                r.fg_beside_s * 1e6, r.fg_alone_s > 0 ? r.fg_beside_s / r.fg_alone_s : 0.0, r.bg_alone_s * 1e6,
                r.bg_beside_s * 1e6, r.bg_alone_s > 0 ? r.bg_beside_s / r.bg_alone_s : 0.0);
    wr.add_contention(r);
  }
  write_results(wr, a.timing.json_path);
}

}  // namespace ddpbench
