#pragma once
// `ddpsim validate`: a ddpbench-results/1 file (bench/ddpbench on GPUs, scripts/ddp_cpu_bench.py on
// CPUs) turned into the cases to simulate, and the simulated reports put beside the measurements.
// No simulation here: the caller runs the planned scenarios (in child processes) and passes their
// reports to compare_steps.
#include <optional>
#include <string>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "config/catalog.hpp"
#include "report/rendered.hpp"

namespace ddpsim::validate {

struct StepCase {
  core::Json measured;  // the file's /step/cases/<i>
  std::string label;    // the bucket cap ("default" or MiB)
  config::Scenario scenario;
  // The ranks' independent step-to-step compute variation the run measured (rank_jitter_cv below);
  // 0 when the file has none. Above 0 the scenario simulates explicit ranks with it
  // (stragglers.jitter_cv) and the comparison takes the simulated steps' median.
  double jitter_cv = 0;
  // With jitter: the same case with one representative rank (no jitter), whose bucket timeline the
  // per-bucket comparison and the last-bucket split use (a jittered report's buckets are one random
  // step's); the split then adds the ranks' variation, median step - representative step.
  std::optional<config::Scenario> representative;
};

struct Plan {
  std::string file;
  std::string mode;          // "step" or "allreduce"
  std::string cluster_note;  // where the cluster came from
  int ranks = 1;
  std::vector<StepCase> steps;         // mode "step"
  core::Json allreduce_rows;           // mode "allreduce": the file's /allreduce
  collectives::NcclTopology topology;  // mode "allreduce"
};

// Checks `doc` (read from `file`) and builds the cluster: from the run's own calibration (CPU), from
// `cluster_arg` (a bundled cluster or file) or from the GPU name the benchmark recorded. Throws
// core::ConfigError naming the file and JSON path on bad input.
// given_no_ddp_step: each step case's compute is scaled to the case's measured no-DDP step
// (`no_ddp_step_time_s`, scripts/ddp_cpu_bench.py) through training.measured_single_gpu_step.
Plan plan(const config::Catalog& cat, const core::Json& doc, const std::string& file, const std::string& cluster_arg,
          double tolerance, bool given_no_ddp_step = false);

// The optimizer.step() + zero_grad() a step case measured (seconds), from scripts/ddp_cpu_bench.py's
// compute-only steps (not the steps validated): `compute_only_optimizer_s`, or in files from before
// it `compute_only_s - compute_only_backward_end_s`; 0 when the case has neither. Throws
// core::ConfigError (file, JSON path, value) on a value that is not such a time. `i`: the case's
// index in /step/cases.
double measured_optimizer_step(const core::Json& step_case, const std::string& file, size_t i);

// DDP's ranks meet at every bucket's all-reduce, so a step ends when the slowest rank's backward
// does: with compute that varies from step to step independently on each rank, the synchronised
// step is longer than any one rank's median compute (two ranks: by sigma / sqrt(pi), sigma the
// independent part's spread). scripts/ddp_cpu_bench.py records every rank's compute-only step
// times, step by step (`rank_compute_only_times_s`, one array per rank, since 6 Dec 2026); this is
// the coefficient of variation of their rank-independent part: per step s the ranks' mean log time
// m_s is the part they share (the machine slowing both), the residuals ln t_{s,r} - m_s the part
// each rank has alone, sigma^2 = sum of squared residuals / (steps x (ranks - 1)) (unbiased for
// independent ranks of equal spread), cv = sqrt(exp(sigma^2) - 1) (a lognormal's, as
// stragglers.jitter_cv draws). 0 when the case has no such field, one rank or fewer than 3 steps.
// Throws core::ConfigError (file, JSON path, value) on a field that is not one array of positive
// times per rank, all of one length.
double rank_jitter_cv(const core::Json& step_case, int ranks, const std::string& file, size_t i);

// The slower half of a case's timed steps against its faster half: median(upper half) /
// median(lower half) of `times` (1 with fewer than 4). A ratio of kSlowPhaseRatio or more says the
// machine's speed changed during the run (a shared VM's slow phase), not that the steps vary.
double halves_ratio(std::vector<double> times);
// The threshold: the 233 cases of the CPU files in bench/results (2026-12-03) are at most 1.27
// (steps) and 1.19 (compute-only steps); runs that crossed a slow phase of the machine measured
// 1.45-1.58 (bench/results/other-models-2026-12-03c/README.md, "Runs not kept").
inline constexpr double kSlowPhaseRatio = 1.35;

// The step's error along the bucket whose all-reduce ended last in the measured step (several
// ranks, the same bucket plan on both sides): when it was ready, its all-reduce from ready to end
// and the step after it, measured and predicted ({index, bytes, ready_*, allreduce_*, after_*}, each
// _measured_s and _predicted_s; the three differences add up to predicted_step - measured_step).
// Null at one rank, when the plans differ or a time is missing.
core::Json last_bucket_parts(const core::Json& measured, const core::Json& predicted, double measured_step,
                             double predicted_step, int ranks);

// Whether two measured step cases ran the same buckets: both have a non-empty `buckets` array of one
// length whose entries agree in `bytes` (required) and `num_tensors` (where either has it), and
// equal `limits_bytes` where both have them (ddp_cpu_bench.py's default cap and an explicit 25 MiB
// under torch 1.13's rule). compare_steps reports such pairs as the run's own repeat.
bool same_buckets(const core::Json& a, const core::Json& b);

// Measured against predicted, case by case (step time, exposed communication, overlap, bucket end
// times), and each pair of cases with the same buckets (same_buckets) as the run's own repeat
// (`repeated_configurations`); status 3 when a case's step-time error exceeds `tolerance`.
// `representative`: for each case with a representative scenario, its report (else null; may be
// empty when no case has one).
report::Rendered compare_steps(const Plan& plan, const std::vector<core::Json>& predicted, double tolerance,
                               const std::vector<core::Json>& representative = {});

// Measured against predicted all-reduce bus bandwidth per size; status 3 when the median error
// exceeds `tolerance`.
report::Rendered compare_allreduce(const Plan& plan, double tolerance);

}  // namespace ddpsim::validate
