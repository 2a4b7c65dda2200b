#pragma once
// `ddpsim validate`: a ddpbench-results/1 file (bench/ddpbench on GPUs, scripts/ddp_cpu_bench.py on
// CPUs) turned into the cases to simulate, and the simulated reports put beside the measurements.
// No simulation here: the caller runs the planned scenarios (in child processes) and passes their
// reports to compare_steps.
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
Plan plan(const config::Catalog& cat, const core::Json& doc, const std::string& file, const std::string& cluster_arg,
          double tolerance);

// Measured against predicted, case by case (step time, exposed communication, overlap, bucket end
// times); status 3 when a case's step-time error exceeds `tolerance`.
report::Rendered compare_steps(const Plan& plan, const std::vector<core::Json>& predicted, double tolerance);

// Measured against predicted all-reduce bus bandwidth per size; status 3 when the median error
// exceeds `tolerance`.
report::Rendered compare_allreduce(const Plan& plan, double tolerance);

}  // namespace ddpsim::validate
