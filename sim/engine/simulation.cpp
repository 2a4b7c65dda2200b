#include "engine/simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>

#include "collectives/collective_model.hpp"
#include "core/error.hpp"
#include "ddp/step_plan.hpp"
#include "engine/data_parallel.hpp"
#include "engine/executor.hpp"
#include "gpu/compute_model.hpp"
#include "memory/memory_model.hpp"
#include "network/flow.hpp"
#include "network/registry.hpp"
#include "plan/ddp_builder.hpp"
#include "plan/fsdp_builder.hpp"
#include "report/metrics.hpp"

namespace sg4 = simgrid::s4u;

namespace ddpsim::engine {
namespace {

gpu::ContentionParams contention_params(const config::Scenario& sc) {
  gpu::ContentionParams c;
  c.enabled = sc.contention.enabled && sc.cluster.world_size() > 1;
  c.hbm_bytes_per_nccl_byte =
      sc.contention.hbm_bytes_per_nccl_byte.value_or(sc.cluster.gpu.hbm_bytes_per_nccl_byte.value_or(2.5));
  c.comm_slowdown = sc.contention.comm_slowdown.value_or(sc.cluster.gpu.comm_slowdown.value_or(5.5 / 4.7));
  c.max_slowdown = sc.contention.max_slowdown;
  c.fixed_compute_slowdown = sc.contention.compute_slowdown;
  c.nccl_high_priority = sc.streams.nccl_high_priority;
  return c;
}

report::StepReport build_report(const config::Scenario& sc_, const gpu::ComputeProfile& profile_,
                                const plan::Plan& plan_, const ddp::StepPlan& steps_, report::Timeline& timeline_,
                                network::Backend& backend, bool contention,
                                const std::vector<report::TracedRank>& traced_ranks_) {
  report::StepReport r;
  r.scenario = sc_.name;
  r.model = sc_.model.name;
  r.cluster = sc_.cluster.name;
  r.gpu = sc_.cluster.gpu.name;
  r.world_size = plan_.world_size;
  r.nodes = sc_.cluster.nodes;
  r.gpus_per_node = sc_.cluster.gpus_per_node;
  r.batch_size = sc_.training.batch_size;
  r.backend = backend.name();
  r.fidelity = config::to_string(sc_.simulation.fidelity);
  r.bucket_cap_mb = sc_.ddp.bucket_cap_mb;
  r.grad_bytes = sc_.model.grad_bytes();
  r.num_params = static_cast<int>(sc_.model.params.size());
  r.rebuilt = steps_.buckets.rebuilt;
  r.comm_hook = config::to_string(sc_.ddp.comm_hook);
  r.explicit_ranks = plan_.ranks > 1;
  r.contention = contention;
  r.compute_scale = profile_.compute_scale;
  r.measured_layers = profile_.measured_layers;
  r.compute_provenance = profile_.provenance;
  r.compute_scale_per = profile_.compute_scale_per;
  r.transfer_from = profile_.transfer_from;
  r.transfer_from_device = profile_.transfer_from_device;
  r.transfer_to = profile_.transfer_to;
  for (const auto& c : profile_.transfer)
    r.transfer_classes.push_back(
        {c.name, c.measured_s * profile_.compute_scale, c.transferred_s * profile_.compute_scale, c.factor()});
  r.model_flops_per_micro_step = profile_.model_flops;
  r.mfu_peak_flops = profile_.mfu_peak;
  r.mfu_peak_dtype = profile_.mfu_peak_dtype;
  r.seq_len = profile_.seq_len;
  r.image_size = profile_.image_size;
  r.attention = profile_.attention;
  report::fill_iterations(timeline_, r);
  r.trace = std::move(timeline_.trace);
  r.traced_ranks = traced_ranks_;
  r.flows = backend.flows();
  r.flows_reused = backend.flows_reused();
  r.ranks = config::to_string(sc_.simulation.ranks);
  r.memory = memory::estimate_memory(sc_);
  const auto& z = sc_.training.zero_redundancy_optimizer;
  r.zero_redundancy_optimizer = !z.enabled ? "off" : z.overlap_with_ddp ? "overlap_with_ddp" : "on";
  r.activation_checkpointing = config::to_string(sc_.training.activation_checkpointing);
  if (sc_.training.wrapper == config::Wrapper::FSDP) {
    const auto& f = sc_.training.fsdp;
    const auto g = plan::fsdp_groups(sc_);
    const auto units = plan::fsdp_units(sc_);
    for (const auto& u : units) r.fsdp_units.push_back(u.name);
    r.fsdp = std::string(f.version == 1 ? "FSDP1 FullyShardedDataParallel" : "FSDP2 fully_shard") + " " +
             config::to_string(f.sharding_strategy) + ": " + std::to_string(units.size()) + " units (wrap " +
             config::to_string(f.wrap) + "), shard group " + std::to_string(g.shard) +
             (g.replica > 1 ? " x " + std::to_string(g.replica) + " replicas" : std::string()) +
             (f.version == 1 ? ", backward_prefetch " + config::to_string(f.backward_prefetch) +
                                   (f.forward_prefetch ? ", forward_prefetch" : "") +
                                   (f.limit_all_gathers ? ", limit_all_gathers" : "")
                             : std::string(", implicit prefetch")) +
             (f.param_dtype ? ", param_dtype " + config::to_string(*f.param_dtype) : std::string()) +
             (f.reduce_dtype ? ", reduce_dtype " + config::to_string(*f.reduce_dtype) : std::string()) +
             "; activation checkpointing " + r.activation_checkpointing;
    for (auto* it : {&r.steady, &r.iteration1})
      for (auto& row : it->units)
        if (static_cast<size_t>(row.index) < units.size()) row.name = units[static_cast<size_t>(row.index)].name;
  }
  r.link_classes = backend.link_totals();
  r.link_steps = timeline_.steady_steps;
  r.links_note = backend.links_note();
  r.link_counters = backend.link_counters();
  return r;
}

// SimGrid gives every actor a stack of its own: an mmap'd region with a guard page
// (contexts/guard-size, one page by default), two memory mappings; Linux caps a process's
// mappings at vm.max_map_count and SimGrid aborts past it ("Failed to protect stack"). Refused
// before the run instead, naming the setting that decides it.
void check_actor_mappings(const config::Scenario& sc, long long ranks, long long streams, long long per_round) {
  long long max_maps = 0;
  if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%lld", &max_maps) != 1) max_maps = 0;
    std::fclose(f);
  }
  if (max_maps <= 0) return;  // not Linux, or unreadable: nothing to check against
  // Compute streams, NCCL streams, one flow-actor pool per NCCL stream (rounds in flight) and
  // a reserve for what the process maps besides (libraries, heap, SimGrid itself: 179 measured
  // with GPT-2 on 16,384 GPUs, ECMP 3-tier fat-tree, ranks "all": 61,625 mappings, 30,723 actors).
  const long long actors = ranks + streams + std::max(1LL, streams) * per_round;
  const long long reserve = 512;
  const long long needed = 2 * actors + reserve;
  if (needed <= max_maps) return;
  throw core::ConfigError(
      sc.file + ": /simulation/ranks: \"" + config::to_string(sc.simulation.ranks) + "\" on " +
      std::to_string(sc.cluster.world_size()) + " GPUs needs about " + std::to_string(actors) + " SimGrid actors (" +
      std::to_string(ranks) + " compute streams, " + std::to_string(streams) + " NCCL streams, " +
      std::to_string(std::max(1LL, streams) * per_round) +
      " flow actors), 2 memory mappings each (stack and guard page), more than this machine's vm.max_map_count " +
      std::to_string(max_maps) + " allows (" + std::to_string((max_maps - reserve) / 2) +
      " actors); expected simulation.ranks \"representative\" and no stragglers here, or raise the limit (sysctl -w "
      "vm.max_map_count=" +
      std::to_string(needed) + ")");
}

// The cluster a process group of FSDP's HYBRID_SHARD spans: a shard group is one node's GPUs; a
// replica group one GPU per node, the node's NICs shared by the node's gpus_per_node replica
// groups running at once.
config::ClusterSpec group_cluster(const config::ClusterSpec& c, const plan::ProcessGroup& g) {
  config::ClusterSpec out = c;
  if (g.size == c.gpus_per_node && c.nodes > 1 && g.size != c.world_size()) {
    out.nodes = 1;
  } else if (g.size == c.nodes && c.gpus_per_node > 1) {
    out.gpus_per_node = 1;
    if (out.inter_link && c.nics_per_node > 0) {
      const double share = static_cast<double>(c.nics_per_node) / c.gpus_per_node;
      out.nics_per_node = std::max(1, c.nics_per_node / c.gpus_per_node);
      out.inter_link->bandwidth *= share / out.nics_per_node;
    }
  }
  return out;
}

}  // namespace

std::vector<report::TracedRank> select_traced_ranks(const std::vector<std::vector<double>>& factor, int ranks) {
  std::vector<report::TracedRank> out;
  if (ranks <= kTraceAllRanksUpTo) {
    for (int r = 0; r < ranks; ++r) out.push_back({r, ""});
    return out;
  }
  std::vector<double> total(static_cast<size_t>(ranks), 0.0);
  for (const auto& step : factor)
    for (int r = 0; r < ranks && r < static_cast<int>(step.size()); ++r) total[static_cast<size_t>(r)] += step[r];
  std::vector<int> order(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) order[static_cast<size_t>(r)] = r;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return total[static_cast<size_t>(a)] < total[static_cast<size_t>(b)]; });
  // Slowest: the largest total, the lowest rank among equals.
  int slowest = order.back();
  for (int r : order)
    if (total[static_cast<size_t>(r)] == total[static_cast<size_t>(slowest)]) {
      slowest = r;
      break;
    }
  const int median = order[static_cast<size_t>((ranks - 1) / 2)];
  auto add = [&](int rank, const std::string& role) {
    for (auto& t : out)
      if (t.rank == rank) {
        t.role += ", " + role;
        return;
      }
    out.push_back({rank, role});
  };
  add(0, "rank 0");
  add(slowest, "slowest");
  add(median, "median");
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return out;
}

// Runs `plan` on a fresh SimGrid engine: a host per simulated rank, the backend the scenario
// names, a compute-stream actor per rank and an NCCL-stream actor per collective stream.
report::StepReport simulate(const config::Scenario& sc, const RunOptions& opt) {
  if (sc.training.wrapper == config::Wrapper::DATA_PARALLEL) return simulate_data_parallel(sc, opt);
  const gpu::ComputeProfile profile = gpu::build_compute_profile(sc);
  collectives::CollectiveModel model(sc.cluster, sc.collective);
  const int world = sc.cluster.world_size();
  const int ranks = sc.stragglers.explicit_ranks() && world > 1 ? world : 1;
  ddp::HookCosts costs{profile.peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute, world};
  ddp::StepPlan steps;
  ddp::plan_steps(steps, sc, costs, ranks, opt.simulate_iteration1);
  const bool fsdp = sc.training.wrapper == config::Wrapper::FSDP;
  const plan::Plan plan =
      fsdp ? plan::build_fsdp(sc, profile, steps, ranks) : plan::build_ddp(sc, profile, steps, ranks);
  // Collective models of the process groups that are not the whole cluster.
  std::vector<std::unique_ptr<collectives::CollectiveModel>> group_models;
  for (const auto& g : plan.groups)
    group_models.push_back(g.size != world && g.size > 1 ? std::make_unique<collectives::CollectiveModel>(
                                                               group_cluster(sc.cluster, g), sc.collective)
                                                         : nullptr);

  report::Timeline timeline;
  timeline.world_size = world;
  timeline.batch_size = sc.training.batch_size;
  timeline.steady_steps = steps.steady_steps;
  timeline.has_iteration1 = steps.has_iteration1;
  timeline.loader_samples_per_s = sc.training.loader_samples_per_s.value_or(0.0);
  size_timeline(plan, timeline);
  std::vector<report::TracedRank> traced_ranks;
  std::vector<char> traced(static_cast<size_t>(ranks), 0);
  if (opt.collect_trace) {
    traced_ranks = select_traced_ranks(plan.factor, ranks);
    for (const auto& tr : traced_ranks) traced[static_cast<size_t>(tr.rank)] = 1;
  }

  const auto engine = network::FlowBackend::create_engine();
  // One star zone: hosts for the simulated ranks' GPUs, and whatever the backend adds; routes
  // are per endpoint (no N x N table). GPU work is timed waits (GpuShare): hosts place actors.
  auto* zone = sg4::create_star_zone("platform");
  std::vector<sg4::Host*> hosts;
  for (int r = 0; r < ranks; ++r) hosts.push_back(zone->create_host("compute" + std::to_string(r), 1.0)->seal());
  int collective_streams = 0;
  for (const auto& s : plan.streams) collective_streams += s.kind == plan::StreamKind::COLLECTIVE ? 1 : 0;
  const auto backend =
      network::make_backend(config::to_string(sc.simulation.backend),
                            {zone, sc.cluster, model.ring(), sc.simulation, sc.collective.nccl_cross_nic,
                             opt.collect_trace, 0, 0, collective_streams <= 1});
  zone->seal();
  check_actor_mappings(sc, ranks, collective_streams, static_cast<long long>(backend->actors_per_round()));

  JobBoard board(plan, ranks);
  ExecContext ctx{plan,   model, *backend, timeline, board, contention_params(sc), opt.collect_trace,
                  traced, {},    {},       {},       {}};
  ctx.mark_time.assign(plan.tasks.size(), 0.0);
  for (const auto& m : group_models) ctx.group_models.push_back(m.get());
  ctx.compute_program = plan.stream_tasks(0);
  for (int r = 0; r < ranks; ++r) {
    ctx.shares.push_back(std::make_unique<GpuShare>(sc.cluster.gpu, sc.compute.memory_efficiency, ctx.contention));
    sg4::Actor::create("compute-stream-" + std::to_string(r), hosts[static_cast<size_t>(r)],
                       [&ctx, r] { run_compute_stream(ctx, r); });
  }
  for (size_t s = 0; s < plan.streams.size(); ++s)
    if (plan.streams[s].kind == plan::StreamKind::COLLECTIVE)
      sg4::Actor::create("nccl-stream-" + std::to_string(s - 1), hosts[0],
                         [&ctx, s] { run_nccl_stream(ctx, static_cast<int>(s)); });
  engine->run();
  if (!board.all_finished()) throw core::SimulationError("simulation ended before every rank finished its steps");
  return build_report(sc, profile, plan, steps, timeline, *backend, ctx.contention.enabled, traced_ranks);
}

}  // namespace ddpsim::engine
