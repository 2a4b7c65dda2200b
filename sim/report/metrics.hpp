#pragma once
// The report's quantities from the engine's Timeline, each computed in one place (docs/design.md,
// "Definitions the reports use"). SimGrid-free; unit-tested on hand-made timelines.
#include "config/specs.hpp"
#include "gpu/compute_model.hpp"
#include "report/report.hpp"
#include "report/timeline.hpp"

namespace ddpsim::report {

// The optimizer step `report` (all its micro-steps) as rank 0 saw it.
IterationReport iteration_report(const Timeline& t, int report);
// Iteration 1 (when simulated) and the steady state: with several steady steps (explicit ranks)
// their mean, with the step-time distribution. Fills iteration1, steady, steady_iteration,
// has_iteration1 of `into`; the caller fills the case fields.
void fill_iterations(const Timeline& t, StepReport& into);
// When iteration 1 is faster than the steady state, names what accounts for the difference in
// into.iteration1_faster_because (step = compute_only + contention + straggler_wait +
// comm_exposed + data_wait, compared term by term). Three mechanisms are named: (1) the steady
// state's buckets cost more all-reduce time alone than iteration 1's single bucket (each call pays
// NCCL's latency and smaller messages run at lower bandwidth: a latency-dominated fabric), which
// shows in comm_exposed; (2) communication overlapping the backward slows the compute kernels
// (contention); (3) DDP's host work the GPU waits for grows with the steady state's buckets
// (ddp_*_host_s, part of compute_only). If those do not cover the difference the field stays
// empty. Called by fill_iterations.
void explain_iteration1(StepReport& r);

// The whole report of a run from its Timeline (every wrapper): the case fields from the scenario,
// the compute profile and the network backend's statistics, the figures from the Timeline
// (fill_iterations; a process driving several GPUs, DataParallel: its phases, per-GPU traffic and
// the step). Moves the Timeline's trace into the report.
StepReport make_report(const config::Scenario& scenario, const gpu::ComputeProfile& profile, Timeline& timeline,
                       NetworkStats network);

// Derived quantities of an iteration from its sums: exposed communication, overlap ratio (unclamped,
// undefined without communication), hidden communication, per-micro-step and per-sample figures.
void derive(IterationReport& it);

}  // namespace ddpsim::report
