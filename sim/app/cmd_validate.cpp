// `ddpsim validate RESULTS.json`: rebuild the case a ddpbench (GPU) or ddp_cpu_bench (CPU) run
// measured (validate/bench_results), simulate it in child processes, and put prediction and
// measurement side by side.
#include <functional>

#include "app/commands.hpp"
#include "app/sweep.hpp"
#include "core/error.hpp"
#include "engine/simulation.hpp"
#include "report/report.hpp"
#include "validate/bench_results.hpp"

namespace ddpsim::app {

int cmd_validate(const CommonOptions& common, const ValidateArgs& args) {
  check_outputs({args.json_out});
  auto cat = common.catalog();
  const auto plan = validate::plan(cat, core::read_json_file(args.results), args.results, args.cluster, args.tolerance,
                                   args.given_no_ddp_step);
  if (plan.mode == "allreduce")
    return emit(validate::compare_allreduce(plan, args.tolerance), args.json_out, "validate");
  // Each case, then the representative-rank twins of the cases simulated with their ranks' jitter.
  std::vector<std::function<core::Json()>> work;
  std::vector<size_t> twin_of;
  for (const auto& c : plan.steps) work.push_back([sc = c.scenario] { return report::to_json(engine::simulate(sc)); });
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].representative) {
      work.push_back([sc = *plan.steps[i].representative] { return report::to_json(engine::simulate(sc)); });
      twin_of.push_back(i);
    }
  auto results = run_in_children(work, 0);
  std::vector<core::Json> predicted, representative(plan.steps.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const size_t c = i < plan.steps.size() ? i : twin_of[i - plan.steps.size()];
    if (!results[i].ok) throw core::SimulationError("validate: case " + std::to_string(c) + ": " + results[i].error);
    if (i < plan.steps.size())
      predicted.push_back(results[i].value);
    else
      representative[c] = results[i].value;
  }
  return emit(validate::compare_steps(plan, predicted, args.tolerance, representative), args.json_out, "validate");
}

Command register_validate(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd =
      app.add_subcommand("validate", "simulate what a ddpbench / ddp_cpu_bench results file measured, side by side");
  cmd->add_option("results", args->results, "ddpbench-results/1 JSON file")->required();
  cmd->add_option("--tolerance", args->tolerance,
                  "relative step-time (or busbw) error allowed; exit 3 beyond it (default 0.05)")
      ->check(number_in(0, 1e6, true));
  cmd->add_option("--cluster", args->cluster, "cluster for GPU results (default: inferred from the GPU name)");
  cmd->add_option("--json", args->json_out, "write the comparison as JSON to FILE or -");
  cmd->add_flag("--given-no-ddp-step", args->given_no_ddp_step,
                "scale compute to each case's measured no-DDP step (training.measured_single_gpu_step), so that "
                "the step error is DDP's and communication's alone");
  return {cmd, [&common, args] { return cmd_validate(common, *args); }};
}
}  // namespace ddpsim::app
