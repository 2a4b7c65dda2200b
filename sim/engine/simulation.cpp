#include "engine/simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <tuple>

#include "collectives/collective_model.hpp"
#include "core/error.hpp"
#include "engine/executor.hpp"
#include "network/registry.hpp"
#include "plan/build.hpp"
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
  // Compute streams, NCCL streams, one set of the flow backend's pool per NCCL stream (rounds in
  // flight: about 8 sqrt(flows) senders, network/flow.cpp) and a reserve for what the process
  // maps besides (libraries, heap, SimGrid itself: 179-182 measured with GPT-2, ECMP 3-tier
  // fat-tree, ranks "all", at 16,384 and 131,072 GPUs).
  const long long actors = ranks + streams + std::max(1LL, streams) * per_round;
  const long long reserve = 512;
  const long long needed = 2 * actors + reserve;
  if (needed <= max_maps) return;
  throw core::ConfigError(
      sc.file + ": /simulation/ranks: \"" + config::to_string(sc.simulation.ranks) + "\" on " +
      std::to_string(sc.cluster.world_size()) + " GPUs needs about " + std::to_string(actors) + " SimGrid actors (" +
      std::to_string(ranks) + " compute streams, " + std::to_string(streams) + " NCCL streams, " +
      std::to_string(std::max(1LL, streams) * per_round) +
      " flow senders), 2 memory mappings each (stack and guard page), more than this machine's vm.max_map_count " +
      std::to_string(max_maps) + " allows (" + std::to_string((max_maps - reserve) / 2) +
      " actors); expected simulation.ranks \"representative\" and no stragglers here, or raise the limit (sysctl -w "
      "vm.max_map_count=" +
      std::to_string(needed) + ")");
}

// The cluster a process group spans, from its layout (plan::ProcessGroup): one node's GPUs (FSDP
// HYBRID_SHARD's shard group), or one GPU per node (its replica group), the node's NICs shared by
// the node's gpus_per_node replica groups running at once.
config::ClusterSpec group_cluster(const config::ClusterSpec& c, const plan::ProcessGroup& g) {
  config::ClusterSpec out = c;
  if (g.nodes <= 0 || g.per_node <= 0) return out;  // the whole cluster
  out.nodes = g.nodes;
  if (g.per_node < c.gpus_per_node) {
    out.gpus_per_node = g.per_node;
    if (g.nodes > 1 && out.inter_link && c.nics_per_node > 0) {
      const double share = static_cast<double>(c.nics_per_node) / c.gpus_per_node * g.per_node;
      out.nics_per_node = std::max(1, c.nics_per_node * g.per_node / c.gpus_per_node);
      out.inter_link->bandwidth *= share / out.nics_per_node;
    }
  }
  return out;
}

// Every collective the plan runs must have an (algorithm, protocol) that NCCL may pick under the
// scenario's collective settings: NCCL_ALGO=NVLS on GPUs without NVLink SHARP leaves none, and NCCL
// itself fails such a call. Checked here, before any actor runs (an exception inside an actor
// aborts the process), through op_timing as the streams time them, once per distinct (model,
// operation, size).
void check_collectives_enabled(const config::Scenario& sc, const plan::Plan& plan,
                               const collectives::CollectiveModel& model,
                               const std::vector<std::unique_ptr<collectives::CollectiveModel>>& group_models) {
  std::set<std::tuple<const collectives::CollectiveModel*, int, double>> seen;
  for (const auto& t : plan.tasks) {
    if (t.kind != plan::TaskKind::COLLECTIVE) continue;
    const auto& stream = plan.streams.at(static_cast<size_t>(t.stream));
    for (const auto& op : t.chain) {
      if (op.kind == plan::OpKind::KERNEL || op.kind == plan::OpKind::PEER_COPY) continue;
      // The operation's process group (its own, else its stream's), as the NCCL streams time it.
      const collectives::CollectiveModel* m = &model;
      int world = plan.world_size;
      const int group = op.group >= 0 ? op.group : stream.kind == plan::StreamKind::COLLECTIVE ? stream.group : -1;
      if (group >= 0) {
        const auto g = static_cast<size_t>(group);
        world = plan.groups.at(g).size;
        if (g < group_models.size() && group_models[g]) m = group_models[g].get();
      }
      if (!seen.insert({m, static_cast<int>(op.kind), op.bytes}).second) continue;
      try {
        (void)op_timing(*m, op, world);
      } catch (const std::invalid_argument& e) {
        throw core::ConfigError((sc.file.empty() ? sc.name : sc.file) + ": /collective: " + e.what() +
                                " (NCCL fails such a call); expected collective.NCCL_ALGO / NCCL_PROTO that leave one "
                                "this cluster supports (`ddpsim collective --cluster " +
                                sc.cluster.name + " --explain SIZE` lists them)");
      }
    }
  }
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

// Runs the scenario's plan on a fresh SimGrid engine: a host per simulated rank, the backend the
// scenario names, an actor per stream (compute streams per rank, NCCL streams, a process's host
// threads and GPU streams); the report is computed from the Timeline (report/metrics).
report::StepReport simulate(const config::Scenario& sc, const RunOptions& opt) {
  plan::Built built = plan::build(sc, opt.simulate_iteration1);
  const plan::Plan& plan = built.plan;
  collectives::CollectiveModel model(sc.cluster, sc.collective);
  const int ranks = plan.ranks;
  report::Timeline& timeline = built.timeline;
  // Collective models of the process groups that are not the whole cluster (FSDP's shard and
  // replica groups).
  const int world = sc.cluster.world_size();
  std::vector<std::unique_ptr<collectives::CollectiveModel>> group_models;
  for (const auto& g : plan.groups)
    group_models.push_back(g.size != world && g.size > 1 ? std::make_unique<collectives::CollectiveModel>(
                                                               group_cluster(sc.cluster, g), sc.collective)
                                                         : nullptr);
  check_collectives_enabled(sc, plan, model, group_models);
  size_timeline(plan, timeline);
  std::vector<char> traced(static_cast<size_t>(ranks), 0);
  if (opt.collect_trace) {
    timeline.traced_ranks = select_traced_ranks(plan.factor, ranks);
    for (const auto& tr : timeline.traced_ranks) traced[static_cast<size_t>(tr.rank)] = 1;
    for (const auto& k : plan.tracks) timeline.tracks.push_back({k.pid, k.tid, k.process, k.thread});
    timeline.phase_track = plan.phase_track;
  }
  int collective_streams = 0, compute_streams = 0, host_streams = 0;
  bool peer_copies = false;
  timeline.comm_streams = 0;
  for (const auto& s : plan.streams) {
    if (s.kind == plan::StreamKind::COLLECTIVE) {
      // A stream with several workers runs that many collectives at once: an actor each.
      collective_streams += std::max(1, s.workers);
      ++timeline.comm_streams;
      timeline.comm_workers = std::max(timeline.comm_workers, s.workers);
    }
    compute_streams += s.kind == plan::StreamKind::COMPUTE ? 1 : 0;
    host_streams += s.kind == plan::StreamKind::HOST ? 1 : 0;
  }
  for (const auto& t : plan.tasks)
    for (const auto& op : t.chain) peer_copies = peer_copies || op.kind == plan::OpKind::PEER_COPY;

  auto engine = create_engine();
  // One star zone: hosts for the simulated ranks' GPUs, and whatever the backend adds; routes
  // are per endpoint (no N x N table). GPU work is timed waits (GpuShare): hosts place actors.
  auto* zone = sg4::create_star_zone("platform");
  std::vector<sg4::Host*> hosts;
  for (int r = 0; r < ranks; ++r) hosts.push_back(zone->create_host("compute" + std::to_string(r), 1.0)->seal());
  const auto backend = network::make_backend(
      config::to_string(sc.simulation.backend),
      {zone, sc.cluster, model.ring(), sc.simulation, sc.collective.nccl_cross_nic, opt.collect_trace,
       plan.process_gpus, plan.peer_bandwidth, collective_streams <= 1 && !peer_copies});
  zone->seal();
  check_actor_mappings(sc, static_cast<long long>(ranks) * compute_streams + host_streams, collective_streams,
                       static_cast<long long>(backend->actors_per_round()));

  // A process plan's GPU streams are the ranks the board waits for.
  const bool process = host_streams > 0;
  JobBoard board(plan, process ? compute_streams : ranks);
  auto contention = contention_params(sc);
  // GPU sharing is between compute and NCCL streams running side by side.
  contention.enabled = contention.enabled && collective_streams > 0;
  timeline.contention = contention.enabled;
  ExecContext ctx{plan, model, *backend, timeline, board, contention, opt.collect_trace, traced, {}, {}, {}, false,
                  {},   {},    {},       {},       {},    nullptr};
  ctx.mark_time.assign(plan.tasks.size(), 0.0);
  for (size_t s = 0; s < plan.streams.size(); ++s) ctx.programs.push_back(plan.stream_tasks(static_cast<int>(s)));
  for (const auto& m : group_models) ctx.group_models.push_back(m.get());
  ctx.process = process;
  if (process) {
    ctx.done.assign(plan.tasks.size(), 0);
    for (size_t s = 0; s < plan.streams.size(); ++s) ctx.wake.push_back(sg4::ConditionVariable::create());
    ctx.followers.assign(plan.tasks.size(), {});
    for (const auto& t : plan.tasks)
      for (int a : t.after) {
        auto& f = ctx.followers[static_cast<size_t>(a)];
        const auto add = [&f](int s) {
          if (std::find(f.begin(), f.end(), s) == f.end()) f.push_back(s);
        };
        add(t.stream);
        for (int s : t.joined) add(s);
      }
    ctx.lock = sg4::Mutex::create();
  }
  for (int r = 0; r < ranks; ++r)
    ctx.shares.push_back(std::make_unique<GpuShare>(sc.cluster.gpu, sc.compute.memory_efficiency, ctx.contention));
  if (process) {
    // The GPUs' streams, then the host threads (the main thread first).
    for (size_t s = 0; s < plan.streams.size(); ++s)
      if (plan.streams[s].kind == plan::StreamKind::COMPUTE)
        sg4::Actor::create("gpu-stream-" + std::to_string(plan.streams[s].gpu), hosts[0],
                           [&ctx, s] { run_gpu_stream(ctx, static_cast<int>(s)); });
    ctx.host = hosts[0];
    start_first_threads(ctx);
  } else {
    for (int r = 0; r < ranks; ++r)
      sg4::Actor::create("compute-stream-" + std::to_string(r), hosts[static_cast<size_t>(r)],
                         [&ctx, r] { run_compute_stream(ctx, r); });
  }
  for (size_t s = 0; s < plan.streams.size(); ++s)
    if (plan.streams[s].kind == plan::StreamKind::COLLECTIVE)
      for (int w = 0; w < std::max(1, plan.streams[s].workers); ++w)
        sg4::Actor::create("nccl-stream-" + std::to_string(s - 1) + (w ? "-worker-" + std::to_string(w) : ""), hosts[0],
                           [&ctx, s, w] { run_nccl_stream(ctx, static_cast<int>(s), w); });
  engine->run();
  if (!board.all_finished()) throw core::SimulationError("simulation ended before every rank finished its steps");
  report::NetworkStats net{backend->name(),        backend->flows(),      backend->flows_reused(),
                           backend->link_totals(), backend->links_note(), backend->link_counters()};
  if (opt.process_ends_after) keep_until_exit(engine);
  return report::make_report(sc, built.profile, timeline, std::move(net));
}

}  // namespace ddpsim::engine
