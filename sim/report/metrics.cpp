#include "report/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "collectives/validated.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "fabric/spec.hpp"

namespace ddpsim::report {
namespace {

// docs/design.md: overlap_ratio = 1 - exposed_comm / comm_alone, unclamped; undefined without communication.
// FSDP's per-unit rows, summed over the micro-steps of an optimizer step (each all-gathers; the
// synced ones reduce): all-gathers (alone, and the compute stream's waits for them) and
// reductions, whose exposed part is, in order of their ends, what lies after the micro-step's
// backward and after the reductions that ended before (as DDP's buckets).
void fsdp_units(const std::vector<CollectiveRecord>& jobs, const RankStepRecord& rs, IterationReport& rep) {
  bool any = false;
  for (const auto& j : jobs) any = any || (j.present && !j.fsdp_op.empty());
  if (!any) return;
  auto row = [&](int u) -> UnitRow& {
    while (rep.units.size() <= static_cast<size_t>(u)) {
      UnitRow r;
      r.index = static_cast<int>(rep.units.size());
      rep.units.push_back(r);
    }
    return rep.units[static_cast<size_t>(u)];
  };
  std::vector<const CollectiveRecord*> reductions;
  for (const auto& j : jobs) {
    if (!j.present || j.fsdp_op.empty() || j.unit < 0) continue;
    UnitRow& r = row(j.unit);
    if (j.fsdp_op == "all-gather") {
      r.allgather_bytes += j.bytes;
      r.allgathers += 1;
      r.allgather_alone_s += j.alone;
    } else {
      r.reduce_bytes += j.fsdp_op == "reduce" ? j.bytes : 0.0;
      r.reduce_alone_s += j.alone;
      reductions.push_back(&j);
    }
  }
  for (size_t u = 0; u < rs.unit_allgather_wait.size(); ++u)
    row(static_cast<int>(u)).allgather_exposed_s += rs.unit_allgather_wait[u];
  for (size_t u = 0; u < rs.unit_reduce_wait.size(); ++u)
    row(static_cast<int>(u)).reduce_exposed_s += rs.unit_reduce_wait[u];
  std::stable_sort(reductions.begin(), reductions.end(),
                   [](const CollectiveRecord* a, const CollectiveRecord* b) { return a->end < b->end; });
  double prev_end = rs.backward_done;
  for (const auto* j : reductions) {
    row(j->unit).reduce_exposed_s += std::max(0.0, j->end - std::max(prev_end, rs.backward_done));
    prev_end = std::max(prev_end, j->end);
  }
}

std::optional<double> overlap_ratio(double exposed_comm, double comm_alone) {
  if (comm_alone > 0) return 1.0 - exposed_comm / comm_alone;
  return std::nullopt;
}

// The sums of an iteration, weighted (the mean over explicit ranks' steady steps).
void accumulate(IterationReport& into, const IterationReport& x, double w) {
  into.step_time_s += w * x.step_time_s;
  into.forward_s += w * x.forward_s;
  into.backward_compute_s += w * x.backward_compute_s;
  into.ddp_copy_s += w * x.ddp_copy_s;
  into.ddp_hook_kernel_s += w * x.ddp_hook_kernel_s;
  into.ddp_buffer_copy_s += w * x.ddp_buffer_copy_s;
  into.finalize_wait_s += w * x.finalize_wait_s;
  into.optimizer_s += w * x.optimizer_s;
  into.compute_only_s += w * x.compute_only_s;
  into.comm_alone_s += w * x.comm_alone_s;
  into.comm_by_function.add(x.comm_by_function, w);
  into.comm_busy_s += w * x.comm_busy_s;
  into.exposed_comm_s += w * x.exposed_comm_s;
  into.contention_s += w * x.contention_s;
  into.straggler_wait_s += w * x.straggler_wait_s;
  into.comm_exposed_s += w * x.comm_exposed_s;
  into.data_wait_s += w * x.data_wait_s;
  into.comm_hidden_s += w * x.comm_hidden_s;
  into.h2d_s += w * x.h2d_s;
  into.autograd_traversal_s += w * x.autograd_traversal_s;
  into.ddp_overhead_s += w * x.ddp_overhead_s;
  into.ddp_forward_host_s += w * x.ddp_forward_host_s;
  into.ddp_hook_host_s += w * x.ddp_hook_host_s;
  into.ddp_bucket_host_s += w * x.ddp_bucket_host_s;
  into.micro_step_time_s += w * x.micro_step_time_s;
  into.comm_alone_per_sample_s += w * x.comm_alone_per_sample_s;
  into.zero_broadcast_s += w * x.zero_broadcast_s;
  into.zero_broadcast_wait_s += w * x.zero_broadcast_wait_s;
  into.allgather_wait_s += w * x.allgather_wait_s;
  into.reduce_wait_s += w * x.reduce_wait_s;
}

}  // namespace

void derive(IterationReport& it) {
  // Waiting for the data loader is not communication: a loader-bound step's exposed comm is what
  // it would wait for communication with the data there (before, the loader's wait counted, and a
  // ResNet-50 at 250 samples/s reported an overlap of -8,994 %).
  it.exposed_comm_s = it.step_time_s - it.compute_only_s - it.data_wait_s;
  // The clock and the sums add the same durations in different orders: drop rounding noise.
  if (std::abs(it.exposed_comm_s) < 1e-12 * it.step_time_s) it.exposed_comm_s = 0.0;
  it.overlap_ratio = overlap_ratio(it.exposed_comm_s, it.comm_alone_s);
  it.comm_hidden_s = std::max(0.0, it.comm_busy_s - it.comm_exposed_s);
  it.micro_step_time_s = it.step_time_s / it.micro_steps;
  it.comm_alone_per_sample_s = it.samples > 0 ? it.comm_alone_s / it.samples : 0.0;
}

IterationReport iteration_report(const Timeline& t, int report) {
  IterationReport rep;
  rep.iteration = t.report_iteration.at(static_cast<size_t>(report));
  const auto& r0 = t.ranks.at(0);
  const bool explicit_ranks = t.ranks.size() > 1;
  bool first = true;
  rep.micro_steps = 0;
  for (size_t si = 0; si < t.steps.size(); ++si) {
    const MicroStepInfo& st = t.steps[si];
    if (st.report != report) continue;
    const RankStepRecord& rs = r0[si];
    if (first) rep.start_s = rs.start;
    first = false;
    ++rep.micro_steps;
    rep.step_time_s = rs.end - rep.start_s;
    rep.forward_s += rs.fwd;
    rep.backward_compute_s += rs.bwd;
    rep.ddp_copy_s += rs.copy;
    rep.ddp_hook_kernel_s += rs.hook_kernel;
    rep.ddp_buffer_copy_s += rs.buffer_copy;
    rep.finalize_wait_s += rs.finalize_wait;
    rep.optimizer_s += rs.opt;
    rep.compute_only_s += rs.compute_only;
    rep.contention_s += rs.contention;
    rep.h2d_s += rs.h2d;
    rep.autograd_traversal_s += rs.traversal;
    rep.ddp_forward_host_s += rs.ddp_forward;
    rep.ddp_hook_host_s += rs.ddp_hook;
    rep.ddp_bucket_host_s += rs.ddp_bucket;
    rep.ddp_overhead_s += rs.copy + rs.hook_kernel + rs.buffer_copy + rs.ddp_forward + rs.ddp_hook + rs.ddp_bucket;
    rep.samples += t.batch_size;
    const double waits =
        rs.finalize_wait + rs.bcast_wait + rs.stall + rs.param_sync_wait + rs.allgather_wait + rs.reduce_wait;
    rep.zero_broadcast_wait_s += rs.param_sync_wait;
    rep.allgather_wait_s += rs.allgather_wait;
    rep.reduce_wait_s += rs.reduce_wait;
    if (st.sync && explicit_ranks) {
      // The part of rank 0's finalize wait spent waiting for the slowest rank's backward.
      double slowest = 0;
      for (const auto& rr : t.ranks) slowest = std::max(slowest, rr[si].backward_done);
      rep.straggler_wait_s += std::min(rs.finalize_wait, std::max(0.0, slowest - rs.backward_done));
    }
    rep.comm_exposed_s += waits;
    const auto& jobs = t.jobs.at(si);
    for (const CollectiveRecord& j : jobs) {
      if (!j.present) continue;
      rep.comm_alone_s += j.alone;
      rep.comm_by_function.add(j.by_function);
      rep.comm_busy_s += j.end - j.start;
      if (j.param_sync) {
        rep.zero_broadcast_s += j.alone;
        rep.zero_broadcasts += j.param_sync_ops;
        rep.zero_broadcast_bytes += j.param_sync_bytes;
      }
    }
    if (t.world_size <= 1) continue;
    fsdp_units(jobs, rs, rep);
    if (!st.sync) continue;
    // Bucket rows: the synced micro-step of this optimizer step.
    rep.buckets.clear();
    double prev_end = rs.backward_done;
    for (size_t b = 0; b < st.bucket_bytes.size(); ++b) {
      const CollectiveRecord& j = jobs.at(1 + b);
      BucketRow row;
      row.index = static_cast<int>(b);
      row.bytes = st.bucket_bytes[b];
      row.num_tensors = st.bucket_tensors[b];
      row.ready_s = rs.ready[b] - rs.start;
      row.launch_s = rs.launch[b] - rs.start;
      row.start_s = j.start - rs.start;
      row.rs_end_s = j.rs_end - rs.start;
      row.end_s = j.end - rs.start;
      row.alone_s = j.alone;
      // Exposed: the part of its transfer after the backward and after the buckets before it.
      row.exposed_s = std::max(0.0, j.end - std::max(prev_end, rs.backward_done));
      row.algorithm = j.algorithm;
      row.protocol = j.protocol;
      row.channels = j.channels;
      row.nccl_estimate_s = j.nccl_estimate;
      row.vs_nccl = j.vs_nccl;
      prev_end = std::max(prev_end, j.end);
      rep.buckets.push_back(row);
    }
  }
  rep.comm_exposed_s -= rep.straggler_wait_s;
  derive(rep);
  // A data loader slower than the step holds every step to its pace (prefetching hides the rest).
  if (t.loader_samples_per_s > 0) {
    const double need = rep.samples / t.loader_samples_per_s;
    if (need > rep.step_time_s) {
      rep.data_wait_s = need - rep.step_time_s;
      rep.step_time_s = need;
      derive(rep);
    }
  }
  return rep;
}

void fill_iterations(const Timeline& t, StepReport& r) {
  r.has_iteration1 = t.has_iteration1;
  int first_steady = 0;
  if (t.has_iteration1) {
    r.iteration1 = iteration_report(t, 0);
    first_steady = 1;
  }
  if (t.steady_steps == 1) {
    r.steady = iteration_report(t, first_steady);
  } else {
    // Explicit ranks: the mean over the steady steps, with the step-time distribution.
    std::vector<double> times;
    IterationReport mean;
    for (int s = 0; s < t.steady_steps; ++s) {
      auto x = iteration_report(t, first_steady + s);
      times.push_back(x.step_time_s);
      accumulate(mean, x, 1.0 / t.steady_steps);
      if (s == t.steady_steps - 1) {
        mean.buckets = x.buckets;
        mean.units = x.units;
        mean.iteration = x.iteration;
        mean.micro_steps = x.micro_steps;
        mean.samples = x.samples;
        mean.zero_broadcasts = x.zero_broadcasts;
        mean.zero_broadcast_bytes = x.zero_broadcast_bytes;
      }
    }
    mean.overlap_ratio = overlap_ratio(mean.exposed_comm_s, mean.comm_alone_s);
    mean.step_time_p50_s = core::percentile(times, 0.50);
    mean.step_time_p95_s = core::percentile(times, 0.95);
    mean.step_time_p99_s = core::percentile(times, 0.99);
    mean.steps_simulated = t.steady_steps;
    r.steady = mean;
  }
  r.steady_iteration = r.steady.iteration;
  explain_iteration1(r);
}

void explain_iteration1(StepReport& r) {
  r.iteration1_faster_because.clear();
  if (!r.has_iteration1) return;
  const IterationReport& a = r.iteration1;
  const IterationReport& s = r.steady;
  const double diff = s.step_time_s - a.step_time_s;
  if (!(diff > 1e-9 * s.step_time_s)) return;
  const double tol = 1e-9 * s.step_time_s;
  double covered = 0;
  std::string why;
  const double d_exposed = s.comm_exposed_s - a.comm_exposed_s;
  if (d_exposed > 0 && s.comm_alone_s > a.comm_alone_s) {
    covered += d_exposed;
    why += "the steady state's " + std::to_string(s.buckets.size()) + " bucket(s) take " +
           core::format_time(s.comm_alone_s) + " of all-reduce time alone against " +
           core::format_time(a.comm_alone_s) + " for iteration 1's " + std::to_string(a.buckets.size()) +
           " (each call pays NCCL's latency and smaller messages run at lower bandwidth), exposing " +
           core::format_time(d_exposed) + " more";
  }
  const double d_contention = s.contention_s - a.contention_s;
  if (d_contention > 0) {
    covered += d_contention;
    if (!why.empty()) why += "; ";
    why += "communication overlapping the backward slows compute kernels by " + core::format_time(s.contention_s) +
           " in the steady state against " + core::format_time(a.contention_s) + " in iteration 1";
  }
  // DDP's host work per bucket: more buckets in the steady state, more of it for the GPU to wait for.
  const double host_s = s.ddp_forward_host_s + s.ddp_hook_host_s + s.ddp_bucket_host_s;
  const double host_a = a.ddp_forward_host_s + a.ddp_hook_host_s + a.ddp_bucket_host_s;
  if (host_s - host_a > 0) {
    covered += host_s - host_a;
    if (!why.empty()) why += "; ";
    why += "DDP's host work for the steady state's " + std::to_string(s.buckets.size()) + " bucket(s) (" +
           core::format_time(host_s) + " waited for) against iteration 1's (" + core::format_time(host_a) + ")";
  }
  if (covered + tol >= diff)
    r.iteration1_faster_because = "iteration 1 is " + core::format_time(diff) + " faster: " + why;
}

}  // namespace ddpsim::report

namespace ddpsim::report {
namespace {

// Fields every wrapper's report carries.
StepReport case_fields(const config::Scenario& sc, const gpu::ComputeProfile& profile, const NetworkStats& net) {
  StepReport r;
  r.scenario = sc.name;
  r.model = sc.model.name;
  r.cluster = sc.cluster.name;
  r.gpu = sc.cluster.gpu.name;
  if (sc.cluster.world_size() > 1) {
    auto parts = collectives::trust_parts(r.cluster, r.gpu, sc.cluster.nodes, sc.cluster.net_plugin);
    r.nccl_trust = collectives::join_trust_parts(parts);
    r.nccl_trust_blocks = {{"", std::move(parts)}};
  }
  r.comm_basis.communicates = sc.cluster.world_size() > 1;
  r.comm_basis.measured = !sc.collective.measured_allreduce.empty();
  r.comm_basis.ring = sc.collective.model != config::CollectiveModelKind::NCCL;
  r.comm_basis.calibrated = !sc.cluster.calibration.source.empty();
  r.comm_basis.calibrated_nodes = sc.cluster.calibration.nodes;
  r.comm_basis.cluster = r.cluster;
  r.comm_basis.gpu = r.gpu;
  r.comm_basis.net_plugin = sc.cluster.net_plugin;
  r.comm_basis.nodes = sc.cluster.nodes;
  r.placement_text = fabric::placement_line(sc.cluster.inter_fabric, r.cluster, sc.cluster.nodes);
  if (!r.placement_text.empty()) {
    r.placement = fabric::to_string(sc.cluster.inter_fabric.placement);
    r.placement_guaranteed = sc.cluster.inter_fabric.placement_guaranteed;
  }
  r.batch_size = sc.training.batch_size;
  r.backend = net.backend;
  r.fidelity = config::to_string(sc.simulation.fidelity);
  r.grad_bytes = sc.model.grad_bytes();
  r.num_params = static_cast<int>(sc.model.params.size());
  r.compute_scale = profile.compute_scale;
  r.measured_layers = profile.measured_layers;
  r.compute_provenance = profile.provenance;
  if (profile.compute_scale == 1.0 && profile.host_forward_s + profile.host_backward_s > 0) {
    r.compute_host_forward_s = profile.host_forward_s;
    r.compute_host_backward_s = profile.host_backward_s;
    r.compute_host_wait_s = profile.gpu_idle_s;
    r.compute_host_kernels_forward = profile.kernels_forward;
    r.compute_host_kernels_backward = profile.kernels_backward;
    for (double s : profile.host_only_forward) r.compute_host_no_kernel_s += s;
    for (double s : profile.host_only_backward) r.compute_host_no_kernel_s += s;
  }
  if (profile.optimizer_host_s > 0) {  // walked (not CUDA graphs, FSDP or ZeRO: compute_model.cpp)
    r.optimizer_host = true;
    r.optimizer_sync = profile.optimizer_sync;
    r.optimizer_host_s = profile.optimizer_host_s;
    r.optimizer_host_wait_s = profile.optimizer_host_wait.seconds;
    r.optimizer_impl = sc.training.measured_optimizer_step_s ? "measured" : sc.training.optimizer_impl;
  }
  // The transposes as the per-kernel model estimates them; not for measured, transferred or
  // calibrated compute, whose layout is whatever ran.
  if (profile.compute_scale == 1.0 && profile.measured_layers == 0 && profile.transfer_from.empty()) {
    r.conv_transposes_s = profile.conv_transposes_s;
    r.per_element_s = profile.per_element.seconds;
    r.per_element_over_bytes_s = profile.per_element.over_bytes_s;
    r.loss_s = profile.loss.seconds();
    r.loss_rows = profile.loss.rows;
    r.loss_classes = profile.loss.classes;
  }
  r.loss = sc.training.loss;
  r.compute_scale_per = profile.compute_scale_per;
  r.model_flops_per_micro_step = profile.model_flops;
  r.mfu_peak_flops = profile.mfu_peak;
  r.mfu_peak_dtype = profile.mfu_peak_dtype;
  r.seq_len = profile.seq_len;
  r.image_size = profile.image_size;
  r.attention = profile.attention;
  r.memory_format = sc.training.memory_format;
  r.flows = net.flows;
  return r;
}

// torch.nn.DataParallel: one Python process, one step; the phases split the step's time line
// (each ends when its last host and GPU work is done, no earlier than the previous one).
void fill_data_parallel(const config::Scenario& sc, Timeline& t, StepReport& r) {
  DataParallelReport d = *t.data_parallel;
  const ProcessRecord& p = t.process;
  const int g = sc.cluster.gpus_per_node;
  r.world_size = g;
  r.nodes = 1;
  r.gpus_per_node = g;
  r.bucket_cap_mb = 0;
  r.comm_hook = "none";
  r.ranks = "data_parallel";
  r.has_iteration1 = false;
  r.steady_iteration = 1;
  double* out[] = {&d.scatter_s, &d.replicate_s, &d.forward_s, &d.gather_s, &d.backward_s, &d.reduce_s, &d.optimizer_s};
  const bool traced = !t.tracks.empty();
  const int phases = static_cast<int>(std::min(t.phases.size(), p.phase_end.size()));
  double prev = 0;
  for (int i = 0; i < phases && i < 7; ++i) {
    const double e = std::max(prev, p.phase_end[static_cast<size_t>(i)]);
    *out[i] = e - prev;
    if (traced && t.phase_track >= 0 && e - prev > 0) {
      const TraceTrack& k = t.tracks[static_cast<size_t>(t.phase_track)];
      t.trace.push_back({t.phases[static_cast<size_t>(i)], "phase", k.tid, prev, e - prev, nullptr, k.pid});
    }
    prev = e;
  }
  d.gil_wait_s = p.lock_wait_s;
  d.host_python_s = p.locked_s.empty() ? 0.0 : p.locked_s[0];  // the main thread's Python
  r.trace = std::move(t.trace);
  r.trace_tracks = t.tracks;
  const double step = std::max(prev, p.end);
  for (size_t i = 0; i < d.gpus.size() && i < p.gpus.size(); ++i) {
    auto& x = d.gpus[i];
    const auto& rec = p.gpus[i];
    x.kernel_s = rec.kernel_s;
    x.transfer_s = rec.transfer_s;
    x.tx_bytes = rec.tx_bytes;
    x.rx_bytes = rec.rx_bytes;
    x.bandwidth_use =
        (step > 0 && x.port_bandwidth > 0) ? (x.tx_bytes + x.rx_bytes) / (step * 2 * x.port_bandwidth) : 0.0;
    x.transfer_bandwidth_share = (x.transfer_s > 0 && x.port_bandwidth > 0)
                                     ? std::max(x.tx_bytes, x.rx_bytes) / (x.transfer_s * x.port_bandwidth)
                                     : 0.0;
  }
  const RankStepRecord& rs = t.ranks.at(0).at(0);  // GPU 0's stream
  auto& s = r.steady;
  s.iteration = 1;
  s.step_time_s = step;
  s.forward_s = d.forward_s;
  s.backward_compute_s = d.backward_s;
  s.optimizer_s = d.optimizer_s;
  s.compute_only_s = rs.compute_only;
  s.comm_alone_s = p.comm_alone_s;
  s.comm_by_function = p.by_function;
  s.comm_busy_s = p.comm_busy_s;
  s.exposed_comm_s = step - rs.compute_only;
  s.comm_exposed_s = p.comm_busy_s;
  s.comm_hidden_s = 0;
  if (p.comm_busy_s > 0) s.overlap_ratio = 0.0;  // nothing overlaps DataParallel's communication
  s.h2d_s = rs.h2d;
  s.samples = sc.training.batch_size;
  s.micro_step_time_s = step;
  s.comm_alone_per_sample_s = p.comm_alone_s / std::max(1, sc.training.batch_size);
  r.iteration1 = s;
  r.data_parallel = std::move(d);
}

}  // namespace

StepReport make_report(const config::Scenario& sc, const gpu::ComputeProfile& profile, Timeline& t, NetworkStats net) {
  StepReport r = case_fields(sc, profile, net);
  // Per GPU at its peak; under DataParallel GPU 0's (the module's gradients and optimizer state, the
  // gathered output).
  r.memory = memory::estimate_memory(sc);
  r.fit = memory::fit_options(sc, r.memory);
  if (t.data_parallel) {
    fill_data_parallel(sc, t, r);
    // DataParallel's one process dispatches for every replica (engine/data_parallel replays the
    // per-op host costs itself): one GPU's queue walk would mislead.
    r.compute_host_forward_s = r.compute_host_backward_s = r.compute_host_wait_s = r.compute_host_no_kernel_s = 0;
    return r;
  }
  r.world_size = t.world_size;
  r.nodes = sc.cluster.nodes;
  r.gpus_per_node = sc.cluster.gpus_per_node;
  // DDP's settings; FSDP reads neither (the scenario warns if they were set): 0 and "none", as for
  // DataParallel.
  const bool fsdp = sc.training.wrapper == config::Wrapper::FSDP;
  r.bucket_cap_mb = fsdp ? 0.0 : sc.ddp.bucket_cap_mb;
  r.first_bucket_cap_bytes = fsdp ? 0.0 : sc.ddp.first_bucket_cap_bytes();
  r.rebuilt = t.rebuilt;
  r.comm_hook = fsdp ? "none" : config::to_string(sc.ddp.comm_hook);
  r.explicit_ranks = t.ranks.size() > 1;
  r.contention = t.contention;
  r.transfer_from = profile.transfer_from;
  r.transfer_from_device = profile.transfer_from_device;
  r.transfer_to = profile.transfer_to;
  for (const auto& c : profile.transfer)
    r.transfer_classes.push_back(
        {c.name, c.measured_s * profile.compute_scale, c.transferred_s * profile.compute_scale, c.factor()});
  fill_iterations(t, r);
  // Beyond all-reduces (FSDP's all-gathers and reduce-scatters, ZeRO's parameter broadcasts): each
  // collective with at least a tenth of the steady step's collective time, with its own closest
  // validated table (the band's part weighs every call; this line names what carries the step, so
  // DDP's small buffer broadcasts stay out of it).
  const CommByFunction& byf = r.steady.comm_by_function;
  std::vector<collectives::Func> carried;
  for (const auto f : {collectives::Func::ALL_REDUCE, collectives::Func::ALL_GATHER, collectives::Func::REDUCE_SCATTER,
                       collectives::Func::BROADCAST})
    if (byf.of(f) >= 0.1 * byf.total() && byf.total() > 0) carried.push_back(f);
  // Each line ends with where this step's calls of that collective fall among the size classes
  // and the figure there (what the band takes; the headline is the table's >= 1 MiB median).
  const auto sizes = [&](collectives::Func f) {
    const collectives::Trust t = collectives::trust(r.cluster, r.gpu, sc.cluster.nodes, sc.cluster.net_plugin, f);
    std::string out;
    for (const auto k : collectives::kSizeClasses)
      if (byf.in(f, k) > 0) {
        char b[96];
        std::snprintf(b, sizeof b, "%s%.0f %% %s (%.1f %%)", out.empty() ? "" : ", ", 100 * byf.in(f, k) / byf.of(f),
                      collectives::size_class_label(k), 100 * t.error_in(k));
        out += b;
      }
    return "this step's calls: " + out;
  };
  if (!r.nccl_trust.empty() && !carried.empty()) {
    const bool allreduce_only = carried.size() == 1 && carried[0] == collectives::Func::ALL_REDUCE;
    const bool allreduce_listed = carried[0] == collectives::Func::ALL_REDUCE;
    std::string line;
    r.nccl_trust_blocks.clear();
    for (const auto f : carried) {
      const std::string name = allreduce_only ? "" : collectives::nccl_tests_binary(f);
      const std::string calls = sizes(f);
      // JSON: every clause in full. The text: one clause a line, and a stand-in all-reduce table
      // already listed above named, not repeated.
      auto parts = collectives::trust_parts(r.cluster, r.gpu, sc.cluster.nodes, sc.cluster.net_plugin, f);
      line += (line.empty() ? "" : " | ") + (name.empty() ? "" : name + ": ") + collectives::join_trust_parts(parts) +
              "; " + calls;
      if (allreduce_listed && f != collectives::Func::ALL_REDUCE)
        parts = collectives::trust_parts(r.cluster, r.gpu, sc.cluster.nodes, sc.cluster.net_plugin, f, true);
      parts.push_back(calls);
      r.nccl_trust_blocks.push_back({name, std::move(parts)});
    }
    r.nccl_trust = line;
  }
  r.trace = std::move(t.trace);
  r.traced_ranks = t.traced_ranks;
  r.trace_comm_streams = t.comm_streams;
  r.trace_comm_workers = t.comm_workers;
  if (sc.collective.model != config::CollectiveModelKind::NCCL) r.trace_comm_name = "collective stream";
  r.flows_reused = net.flows_reused;
  r.ranks = config::to_string(sc.simulation.ranks);
  const auto& z = sc.training.zero_redundancy_optimizer;
  r.zero_redundancy_optimizer = !z.enabled ? "off" : z.overlap_with_ddp ? "overlap_with_ddp" : "on";
  r.activation_checkpointing = config::to_string(sc.training.activation_checkpointing);
  if (!t.fsdp.empty()) {
    r.fsdp = t.fsdp + "; activation checkpointing " + r.activation_checkpointing;
    r.fsdp_units = t.fsdp_units;
    r.fsdp_offload = t.fsdp_offload;
    for (auto* it : {&r.steady, &r.iteration1})
      for (auto& row : it->units)
        if (static_cast<size_t>(row.index) < t.fsdp_units.size())
          row.name = t.fsdp_units[static_cast<size_t>(row.index)];
  }
  r.link_classes = std::move(net.link_classes);
  r.link_steps = t.steady_steps;
  r.links_note = std::move(net.links_note);
  r.link_counters = std::move(net.link_counters);
  return r;
}

}  // namespace ddpsim::report
