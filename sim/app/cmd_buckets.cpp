// `ddpsim buckets`: DDP's iteration-1 and steady-state bucket plans of a model.
#include <cstdio>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "ddp/bucketizer.hpp"
#include "report/views.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

int cmd_buckets(const CommonOptions& common, const BucketsArgs& args) {
  check_outputs({args.json_out});
  auto cat = common.catalog();
  config::ModelSpec model;
  config::DdpSettings ddp;
  std::vector<std::string> overrides = common.overrides;
  if (args.bucket_cap_mb > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", args.bucket_cap_mb);
    overrides.push_back(std::string("ddp.bucket_cap_mb=") + buf);
  }
  if (!args.model.empty() && args.scenario.empty()) {
    // A model alone: DDP defaults, plus any --set ddp.* overrides.
    Json doc = {{"model", args.model},
                {"cluster",
                 {{"name", "none"},
                  {"gpu",
                   {{"name", "none"},
                    {"arch", "ampere"},
                    {"peak_flops", {{"float32", "1TFLOPS"}}},
                    {"hbm_bandwidth", "1TBps"}}},
                  {"nodes", 1},
                  {"gpus_per_node", 1}}}};
    config::apply_overrides(doc, overrides);
    auto sc = cat.scenario_from_json(doc, "buckets", fs::current_path());
    model = sc.model;
    ddp = sc.ddp;
    print_warnings(sc);
  } else {
    if (!args.model.empty()) overrides.push_back("model=" + args.model);
    auto sc = cat.load_scenario(scenario_path(cat, args.scenario), overrides);
    model = sc.model;
    ddp = sc.ddp;
    print_warnings(sc);
  }
  return emit(report::bucket_plans_view(model, ddp, ddp::plan_buckets(model, ddp)), args.json_out, "buckets");
}

Command register_buckets(CLI::App& app, CommonOptions& common) {
  auto args = std::make_shared<BucketsArgs>();
  auto* cmd = app.add_subcommand("buckets", "print DDP's iteration-1 and steady-state bucket plans");
  cmd->add_option("scenario", args->scenario, "bundled scenario name or file");
  cmd->add_option("--model", args->model, "bundled model name or model file (without a scenario: DDP defaults)");
  cmd->add_option("--bucket-cap-mb", args->bucket_cap_mb, "DDP bucket_cap_mb")->check(number_in(0, 1e9, true));
  add_set_option(*cmd, common, "override a field: PATH=VALUE, e.g. ddp.pytorch_version=1.13");
  cmd->add_option("--json", args->json_out, "write {iteration1, steady_state} JSON to FILE or -");
  return {cmd, [&common, args] { return cmd_buckets(common, *args); }};
}
}  // namespace ddpsim::app
