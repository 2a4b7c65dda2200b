// `ddpsim buckets`: DDP's iteration-1 and steady-state bucket plans of a model.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "ddp/bucketizer.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

namespace {

Json buckets_json(const std::vector<ddp::Bucket>& buckets, const config::ModelSpec& m) {
  Json arr = Json::array();
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    arr.push_back({{"index", i},
                   {"bytes", static_cast<long long>(b.bytes)},
                   {"dtype", config::to_string(b.dtype)},
                   {"num_tensors", b.param_indices.size()},
                   {"param_indices", b.param_indices},
                   {"first_param", m.params[b.param_indices.front()].name},
                   {"last_param", m.params[b.param_indices.back()].name}});
  }
  return arr;
}

}  // namespace

int cmd_buckets(const CommonOptions& common, const BucketsArgs& args) {
  {
    std::vector<std::string> out_paths;
    for (const std::string* p : {&args.json_out})
      if (!p->empty()) out_paths.push_back(*p);
    report::check_output_paths(out_paths);  // before the work, so a bad path costs nothing
  }
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
  } else {
    if (!args.model.empty()) overrides.push_back("model=" + args.model);
    auto sc = cat.load_scenario(scenario_path(cat, args.scenario), overrides);
    model = sc.model;
    ddp = sc.ddp;
  }
  auto plans = ddp::plan_buckets(model, ddp);
  Json out{{"model", model.name},
           {"bucket_cap_mb", ddp.bucket_cap_mb},
           {"first_bucket_cap_bytes", static_cast<long long>(ddp.first_bucket_cap_bytes())},
           {"pytorch_version", ddp.pytorch_version},
           {"rebuilt", plans.rebuilt},
           {"rebuild_iteration", plans.rebuild_iteration},
           {"iteration1", buckets_json(plans.iteration1, model)},
           {"steady_state", buckets_json(plans.steady_state, model)}};
  if (!args.json_out.empty()) report::write_output(args.json_out, report::json_text(out, 2, "buckets"));
  if (args.json_out != "-") {
    std::cout << "model " << model.name << ": " << model.params.size() << " parameters, "
              << core::format_bytes(model.grad_bytes()) << " of gradients; bucket_cap_mb " << ddp.bucket_cap_mb
              << ", first bucket cap " << core::format_bytes(ddp.first_bucket_cap_bytes()) << "\n";
    auto print = [&](const char* title, const std::vector<ddp::Bucket>& bs) {
      std::cout << title << " (" << bs.size() << " buckets)\n  idx        size  tensors  first .. last parameter\n";
      for (size_t i = 0; i < bs.size(); ++i) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "  %3zu %11s %8zu  ", i, core::format_bytes(bs[i].bytes).c_str(),
                      bs[i].param_indices.size());
        std::cout << buf << model.params[bs[i].param_indices.front()].name << " .. "
                  << model.params[bs[i].param_indices.back()].name << "\n";
      }
    };
    print("iteration 1", plans.iteration1);
    print(plans.rebuilt ? "steady state (rebuilt from the gradient-ready order)" : "steady state (no rebuild)",
          plans.steady_state);
  }
  return 0;
}

}  // namespace ddpsim::app
