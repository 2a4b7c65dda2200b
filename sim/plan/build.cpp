#include "plan/build.hpp"

#include "core/error.hpp"
#include "ddp/step_plan.hpp"
#include "plan/ddp_builder.hpp"
#include "plan/dp_builder.hpp"
#include "plan/fsdp_builder.hpp"

namespace ddpsim::plan {

Built build(const config::Scenario& sc, bool iteration1) {
  Built b;
  auto& t = b.timeline;
  t.world_size = sc.cluster.world_size();
  t.batch_size = sc.training.batch_size;
  if (sc.training.wrapper == config::Wrapper::DATA_PARALLEL) {
    if (sc.cluster.nodes != 1)
      throw core::ConfigError(sc.file + ": /nodes: " + std::to_string(sc.cluster.nodes) +
                              " nodes with training.wrapper \"data_parallel\"; expected 1");
    b.profile = gpu::build_compute_profile(sc);
    const DpInputs in = dp_inputs(sc, b.profile);
    b.plan = build_data_parallel(sc, b.profile, in);
    t.world_size = sc.cluster.gpus_per_node;
    t.has_iteration1 = false;
    t.data_parallel = dp_report_facts(sc, in);
    return b;
  }
  b.profile = gpu::build_compute_profile(sc);
  const int world = sc.cluster.world_size();
  const int ranks = sc.stragglers.explicit_ranks() && world > 1 ? world : 1;
  ddp::HookCosts costs{b.profile.peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute, world};
  ddp::StepPlan steps;
  ddp::plan_steps(steps, sc, costs, ranks, iteration1);
  if (sc.training.wrapper == config::Wrapper::FSDP) {
    b.plan = build_fsdp(sc, b.profile, steps, ranks);
    const auto& f = sc.training.fsdp;
    const auto g = fsdp_groups(sc);
    const auto units = fsdp_units(sc);
    for (const auto& u : units) t.fsdp_units.push_back(u.name);
    t.fsdp = std::string(f.version == 1 ? "FSDP1 FullyShardedDataParallel" : "FSDP2 fully_shard") + " " +
             config::to_string(f.sharding_strategy) + ": " + std::to_string(units.size()) + " units (wrap " +
             config::to_string(f.wrap) + "), shard group " + std::to_string(g.shard) +
             (g.replica > 1 ? " x " + std::to_string(g.replica) + " replicas" : std::string()) +
             (f.version == 1 ? ", backward_prefetch " + config::to_string(f.backward_prefetch) +
                                   (f.forward_prefetch ? ", forward_prefetch" : "") +
                                   (f.limit_all_gathers ? ", limit_all_gathers" : "")
                             : std::string(", implicit prefetch")) +
             (g.post_forward > 0 ? ", reshard_after_forward " + std::to_string(g.post_forward) +
                                       " (the backward all-gathers over " + std::to_string(g.post_forward) + " GPUs)"
              : f.version == 2 && f.reshard_after_forward && !*f.reshard_after_forward
                  ? std::string(", reshard_after_forward false")
                  : std::string()) +
             (f.version == 2 && !f.reshard_after_backward ? ", reshard_after_backward false" : "") +
             (f.param_dtype ? ", param_dtype " + config::to_string(*f.param_dtype) : std::string()) +
             (f.reduce_dtype ? ", reduce_dtype " + config::to_string(*f.reduce_dtype) : std::string()) +
             (fsdp_offloads(sc) ? ", CPU offload" : "");
    if (fsdp_offloads(sc)) t.fsdp_offload = fsdp_offload(sc);
  } else {
    b.plan = build_ddp(sc, b.profile, steps, ranks);
  }
  t.steady_steps = steps.steady_steps;
  t.has_iteration1 = steps.has_iteration1;
  t.loader_samples_per_s = sc.training.loader_samples_per_s.value_or(0.0);
  t.rebuilt = steps.buckets.rebuilt;
  return b;
}

}  // namespace ddpsim::plan
