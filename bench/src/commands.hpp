#pragma once
// The four subcommands. Each prints a human-readable report on stdout and, with --json, writes a
// ddpbench-results/1 document. They throw ArgError/ModelError/GpuError; main() reports them.
#include "args.hpp"
#include "gpu.hpp"
#include "layer_plan.hpp"
#include "layer_runner.hpp"
#include "model.hpp"

namespace ddpbench {

void cmd_allreduce(const AllreduceArgs& a, const Command& cmd);
void cmd_layers(const LayersArgs& a, const Command& cmd);
void cmd_contention(const ContentionArgs& a, const Command& cmd);
void cmd_step(const StepArgs& a, const Command& cmd);

// Shared by layers and step.
Model load_model_arg(const ModelArgs& m);
PlanOptions plan_options(const ModelArgs& m);
struct LayerTimes {
  std::vector<double> fwd_s, bwd_s;  // median per layer
};
LayerTimes time_layers(LayerRunner& runner, cudaStream_t s, const TimingArgs& t);
nlohmann::json plans_json(const std::vector<LayerPlan>& plans, const LayerTimes* times);
void write_results(const ResultsWriter& w, const std::string& path);

}  // namespace ddpbench
