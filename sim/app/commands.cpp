#include "app/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/sweep.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "config/trace_import.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "ddp/bucketizer.hpp"
#include "engine/simulation.hpp"
#include "gpu/compute_model.hpp"  // [compute]
#include "report/report.hpp"
#include "report/writers.hpp"

namespace fs = std::filesystem;
using ddpsim::core::Json;

namespace ddpsim::app {

config::Catalog CommonOptions::catalog() const {
  return config::Catalog(data_dir.empty() ? config::Catalog::default_root() : fs::path(data_dir));
}

namespace {

fs::path scenario_path(const config::Catalog& cat, const std::string& s) {
  return cat.resolve(config::Kind::SCENARIO, s.empty() ? "default" : s);
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string bucket_csv(const report::StepReport& r) {
  std::ostringstream o;
  o << "iteration,index,bytes,num_tensors,ready_s,launch_s,start_s,reduce_scatter_end_s,end_s,alone_s,exposed_s,"
       "algorithm,protocol,channels\n";
  auto rows = [&](const report::IterationReport& it) {
    for (const auto& b : it.buckets)
      o << it.iteration << ',' << b.index << ',' << b.bytes << ',' << b.num_tensors << ',' << b.ready_s << ','
        << b.launch_s << ',' << b.start_s << ',' << b.rs_end_s << ',' << b.end_s << ',' << b.alone_s << ','
        << b.exposed_s << ',' << b.algorithm << ',' << b.protocol << ',' << b.channels << '\n';
  };
  if (r.has_iteration1) rows(r.iteration1);
  rows(r.steady);
  return o.str();
}

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

// [compute] MFU, provenance and evaluated sizes from the compute profile (the engine reports times only).
static void annotate_compute(report::StepReport& r, const config::Scenario& sc) {
  const auto p = gpu::build_compute_profile(sc);
  r.compute_provenance = p.provenance;
  r.compute_scale_per = p.compute_scale_per;
  r.model_flops_per_micro_step = p.model_flops;
  r.mfu_peak_flops = p.mfu_peak;
  r.mfu_peak_dtype = p.mfu_peak_dtype;
  r.seq_len = p.seq_len;
  r.image_size = p.image_size;
  r.attention = p.attention;
}

int cmd_run(const CommonOptions& common, const RunArgs& args) {
  auto cat = common.catalog();
  auto sc = cat.load_scenario(scenario_path(cat, args.scenario), common.overrides);
  engine::RunOptions opt;
  opt.collect_trace = !args.trace_out.empty();
  auto rep = engine::simulate(sc, opt);
  annotate_compute(rep, sc);  // [compute]
  // Everything is computed before anything is written: a failure leaves no partial output.
  if (!args.json_out.empty()) report::write_output(args.json_out, report::to_json(rep).dump(2));
  if (!args.trace_out.empty()) report::write_output(args.trace_out, report::to_chrome_trace(rep).dump());
  if (!args.csv_out.empty()) report::write_output(args.csv_out, bucket_csv(rep));
  if (!args.quiet && args.json_out != "-" && args.trace_out != "-" && args.csv_out != "-")
    std::cout << report::to_table(rep);
  return 0;
}

int cmd_buckets(const CommonOptions& common, const BucketsArgs& args) {
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
  if (!args.json_out.empty()) report::write_output(args.json_out, out.dump(2));
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

int cmd_sweep(const CommonOptions& common, const SweepArgs& args) {
  auto cat = common.catalog();
  fs::path file = scenario_path(cat, args.scenario);
  std::vector<SweepParam> params;
  for (const auto& p : args.params) params.push_back(parse_sweep_param(p));
  if (params.empty()) throw core::ConfigError("sweep: give at least one --param PATH=V1,V2,...");
  auto grid = sweep_grid(params);
  // Validate every configuration before simulating any of them.
  std::vector<std::vector<std::string>> override_sets;
  std::vector<std::string> problems;
  for (const auto& row : grid) {
    auto ov = common.overrides;
    for (const auto& [k, v] : row) ov.push_back(k + "=" + v);
    try {
      cat.load_scenario(file, ov);
    } catch (const core::ConfigError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
    override_sets.push_back(std::move(ov));
  }
  if (!problems.empty()) throw core::ConfigError(problems);

  std::vector<std::function<Json()>> work;
  for (const auto& ov : override_sets)
    work.push_back([&cat, file, ov] {
      auto sc = cat.load_scenario(file, ov);
      engine::RunOptions opt;
      opt.collect_trace = false;
      return report::summary_json(engine::simulate(sc, opt));
    });
  auto results = run_in_children(work, args.jobs);
  for (const auto& r : results)
    if (!r.ok) throw core::SimulationError("sweep: a configuration failed: " + r.error);

  Json rows = Json::array();
  size_t best = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    Json row = results[i].value;
    Json p = Json::object();
    for (const auto& [k, v] : grid[i]) p[k] = config::parse_override_value(v);
    Json out{{"params", p}};
    for (auto it = row.begin(); it != row.end(); ++it) out[it.key()] = it.value();
    rows.push_back(out);
    if (rows[i]["step_time_s"].get<double>() < rows[best]["step_time_s"].get<double>()) best = i;
  }
  Json doc{{"scenario", file.string()}, {"metric", "step_time_s"}, {"rows", rows}, {"best", rows[best]}};

  std::string csv;
  {
    std::ostringstream o;
    for (const auto& p : params) o << csv_escape(p.path) << ',';
    o << "step_time_s,compute_only_s,comm_alone_s,comm_busy_s,exposed_comm_s,overlap_ratio,num_buckets,samples_per_s,"
         "best\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      for (const auto& [k, v] : grid[i]) o << csv_escape(v) << ',';
      const auto& r = rows[i];
      o << r["step_time_s"].get<double>() << ',' << r["compute_only_s"].get<double>() << ','
        << r["comm_alone_s"].get<double>() << ',' << r["comm_busy_s"].get<double>() << ','
        << r["exposed_comm_s"].get<double>() << ','
        << (r["overlap_ratio"].is_null() ? std::string("") : std::to_string(r["overlap_ratio"].get<double>())) << ','
        << r["num_buckets"].get<long long>() << ',' << r["samples_per_s"].get<double>() << ',' << (i == best ? 1 : 0)
        << '\n';
    }
    csv = o.str();
  }
  if (!args.json_out.empty()) report::write_output(args.json_out, doc.dump(2));
  if (!args.csv_out.empty()) report::write_output(args.csv_out, csv);
  if (args.json_out != "-" && args.csv_out != "-") {
    std::cout << "sweep of " << file.string() << " (" << rows.size() << " configurations; best = least step time)\n";
    std::string head;
    for (const auto& p : params) {
      char b[64];
      std::snprintf(b, sizeof b, "%22s", p.path.c_str());
      head += b;
    }
    std::cout << head << "   step time  exposed comm   overlap  buckets\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      std::string line;
      for (const auto& [k, v] : grid[i]) {
        char b[64];
        std::snprintf(b, sizeof b, "%22s", v.c_str());
        line += b;
      }
      char b[160];
      std::snprintf(
          b, sizeof b, "  %10s  %12s  %8s  %7lld%s\n", core::format_time(r["step_time_s"].get<double>()).c_str(),
          core::format_time(r["exposed_comm_s"].get<double>()).c_str(),
          r["overlap_ratio"].is_null()
              ? "n/a"
              : (std::to_string(static_cast<int>(r["overlap_ratio"].get<double>() * 1000) / 10.0).substr(0, 5) + "%")
                    .c_str(),
          r["num_buckets"].get<long long>(), i == best ? "   <- best" : "");
      std::cout << line << b;
    }
  }
  return 0;
}

int cmd_list(const CommonOptions& common, const std::string& what) {
  auto cat = common.catalog();
  struct Entry {
    const char* title;
    config::Kind kind;
  };
  const Entry entries[] = {{"models", config::Kind::MODEL},
                           {"gpus", config::Kind::GPU},
                           {"links", config::Kind::LINK},
                           {"clusters", config::Kind::CLUSTER},
                           {"scenarios", config::Kind::SCENARIO}};
  bool any = false;
  for (const auto& e : entries) {
    if (!what.empty() && what != e.title) continue;
    any = true;
    std::cout << e.title << " (" << cat.dir(e.kind).string() << "):\n";
    for (const auto& n : cat.names(e.kind)) {
      std::string detail;
      try {
        auto path = cat.dir(e.kind) / (n + ".json");
        switch (e.kind) {
          case config::Kind::MODEL: {
            auto m = cat.load_model(path);
            double numel = static_cast<double>(m.total_numel());
            char b[160];
            double flops = 0;
            for (const auto& l : m.layers) flops += l.fwd_flops;
            std::snprintf(b, sizeof b, "%.1fM parameters in %zu tensors, %s, %zu layers, %.2f GFLOP/sample forward%s",
                          numel / 1e6, m.params.size(), core::format_bytes(m.grad_bytes()).c_str(), m.layers.size(),
                          flops / m.batch_size / 1e9, m.measured_on.empty() ? "" : ", measured");
            detail = b;
            // [compute] the size the layers were exported at
            if (m.kernel_export_size > 0)
              detail += (m.kernel_size_kind == "seq" ? ", exported at seq " : ", exported at image ") +
                        std::to_string(m.kernel_export_size);
            break;
          }
          case config::Kind::GPU: {
            auto g = cat.load_gpu(path);
            detail = config::to_string(g.arch) + ", " + std::to_string(g.sm_count) + " SMs, HBM " +
                     core::format_bandwidth(g.hbm_bandwidth);
            break;
          }
          case config::Kind::LINK: {
            auto l = cat.load_link(path);
            detail = config::to_string(l.kind) + ", " + core::format_bandwidth(l.bandwidth) + ", " +
                     core::format_time(l.latency) + " per step";
            break;
          }
          case config::Kind::CLUSTER: {
            auto c = cat.load_cluster(path);
            detail = std::to_string(c.nodes) + " x " + std::to_string(c.gpus_per_node) + " " + c.gpu.name + ", " +
                     config::to_string(c.fabric) + " " + c.intra_link.name +
                     (c.inter_link ? ", " + std::to_string(c.nics_per_node) + " x " + c.inter_link->name : "");
            break;
          }
          case config::Kind::SCENARIO: {
            auto j = core::read_json_file(path.string());
            detail = j.value("description", "");
            break;
          }
        }
      } catch (const std::exception& ex) {
        detail = std::string("INVALID: ") + ex.what();
      }
      std::cout << "  " << n << (detail.empty() ? "" : "  -  " + detail) << "\n";
    }
  }
  if (!any)
    throw core::ConfigError("list: \"" + what +
                            "\" is not a category; expected models, gpus, links, clusters or scenarios");
  return 0;
}

int cmd_import_trace(const CommonOptions& common, const ImportTraceArgs& args) {
  auto cat = common.catalog();
  const auto model_file = cat.resolve(config::Kind::MODEL, args.model);
  cat.load_model(model_file);  // validate the model first
  Json model = core::read_json_file(model_file.string());
  Json trace = config::read_trace_file(args.trace);
  std::optional<int> batch;
  if (args.batch > 0) batch = args.batch;
  auto res = config::import_trace(trace, args.trace, model, model_file.string(), batch);
  // The result must load as a model before it is written.
  core::Diagnostics d(args.out.empty() ? "import-trace output" : args.out);
  config::parse_model(res.model, d);
  d.throw_if_any();
  if (!args.out.empty()) report::write_output(args.out, res.model.dump(2));
  std::cout << "import-trace: " << res.layers_timed << " of " << res.layers_total << " layers timed from " << args.trace
            << " (forward " << core::format_time(res.trace_forward_s) << ", backward "
            << core::format_time(res.trace_backward_s) << " in the trace)\n";
  for (const auto& w : res.warnings) std::cout << "  warning: " << w << "\n";
  if (args.out.empty()) std::cout << "  (no -o given: nothing written)\n";
  return 0;
}

int cmd_show(const CommonOptions& common, const std::string& name, const std::string& json_out) {
  auto cat = common.catalog();
  auto m = cat.load_model(cat.resolve(config::Kind::MODEL, name));
  Json layers = Json::array();
  std::ostringstream o;
  o << "model " << m.name << (m.source.empty() ? "" : " (" + m.source + ")") << ": " << m.params.size()
    << " parameter tensors, " << m.total_numel() << " parameters, " << m.layers.size()
    << " layers; counts per sample (export batch " << m.batch_size << ")"
    << (m.measured_on.empty() ? "" : "; measured on " + m.measured_on) << "\n";
  o << "  idx  layer                                    type         params   param MiB  fwd MFLOP  bwd MFLOP   fwd "
       "time   bwd time\n";
  double tf = 0, tb = 0, tp = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const auto& l = m.layers[i];
    double pb = 0;
    int64_t pn = 0;
    for (int p : l.params) pb += m.params[p].bytes(), pn += m.params[p].numel;
    const double f = l.fwd_flops / m.batch_size, b = l.bwd_flops / m.batch_size;
    tf += f, tb += b, tp += pb;
    char line[256];
    std::snprintf(line, sizeof line, "  %3zu  %-40.40s %-11s %8lld %11.3f %10.2f %10.2f %10s %10s\n", i, l.name.c_str(),
                  config::to_string(l.type).c_str(), static_cast<long long>(pn), pb / 1048576.0, f / 1e6, b / 1e6,
                  l.fwd_time ? core::format_time(*l.fwd_time).c_str() : "-",
                  l.bwd_time ? core::format_time(*l.bwd_time).c_str() : "-");
    o << line;
    Json lj{{"index", i},
            {"name", l.name},
            {"type", config::to_string(l.type)},
            {"params", l.params},
            {"param_bytes", pb},
            {"fwd_flops_per_sample", f},
            {"bwd_flops_per_sample", b}};
    if (l.fwd_time) lj["fwd_time_s"] = *l.fwd_time;
    if (l.bwd_time) lj["bwd_time_s"] = *l.bwd_time;
    layers.push_back(lj);
  }
  char tot[200];
  std::snprintf(tot, sizeof tot, "  total%49s %11.3f %10.2f %10.2f   (GFLOP/sample: %.3f forward, %.3f backward)\n", "",
                tp / 1048576.0, tf / 1e6, tb / 1e6, tf / 1e9, tb / 1e9);
  o << tot;
  Json doc{{"model", m.name},
           {"params", m.params.size()},
           {"numel", m.total_numel()},
           {"batch_size", m.batch_size},
           {"fwd_flops_per_sample", tf},
           {"bwd_flops_per_sample", tb},
           {"layers", layers}};
  if (!json_out.empty()) report::write_output(json_out, doc.dump(2));
  if (json_out != "-") std::cout << o.str();
  return 0;
}

int cmd_bench(const CommonOptions& common, const BenchArgs& args) {
  auto cat = common.catalog();
  fs::path file = scenario_path(cat, args.scenario);
  std::vector<int> node_counts = args.nodes;
  if (node_counts.empty()) node_counts.push_back(-1);  // the scenario's own
  Json cases = Json::array();
  for (int nodes : node_counts) {
    auto ov = common.overrides;
    if (nodes > 0) ov.push_back("nodes=" + std::to_string(nodes));
    cat.load_scenario(file, ov);  // validate before forking
    std::vector<std::function<Json()>> work;
    for (int i = 0; i < std::max(1, args.repeat); ++i)
      work.push_back([&cat, file, ov] {
        auto sc = cat.load_scenario(file, ov);
        engine::RunOptions opt;
        opt.simulate_iteration1 = false;
        opt.collect_trace = false;
        auto t0 = std::chrono::steady_clock::now();
        auto rep = engine::simulate(sc, opt);
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return Json{{"wall_s", wall},
                    {"world_size", rep.world_size},
                    {"num_params", rep.num_params},
                    {"num_buckets", rep.steady.buckets.size()},
                    {"flows", rep.flows},
                    {"step_time_s", rep.steady.step_time_s}};
      });
    // One at a time: timings of concurrent children would disturb each other.
    auto results = run_in_children(work, 1);
    std::vector<double> walls;
    Json last;
    for (const auto& r : results) {
      if (!r.ok) throw core::SimulationError("bench: " + r.error);
      walls.push_back(r.value["wall_s"].get<double>());
      last = r.value;
    }
    std::vector<double> sorted = walls;
    std::sort(sorted.begin(), sorted.end());
    Json c = last;
    c.erase("wall_s");
    c["wall_s_per_step"] = sorted[sorted.size() / 2];
    c["wall_s_runs"] = walls;
    cases.push_back(c);
  }
  Json out = cases.front();
  out["scenario"] = file.string();
  out["repeat"] = args.repeat;
  out["note"] = "wall time of simulating one steady-state step (median of the runs), one process per run";
  if (cases.size() > 1) out["scaling"] = cases;
  if (!args.json_out.empty()) report::write_output(args.json_out, out.dump(2));
  if (args.json_out != "-") {
    std::cout << "bench: " << file.string()
              << "\n  world_size    params   buckets       flows   wall s/step (median of " << args.repeat << ")\n";
    for (const auto& c : cases) {
      char b[200];
      std::snprintf(b, sizeof b, "  %10d  %8d  %8lld  %10llu   %.4f\n", c["world_size"].get<int>(),
                    c["num_params"].get<int>(), c["num_buckets"].get<long long>(), c["flows"].get<unsigned long long>(),
                    c["wall_s_per_step"].get<double>());
      std::cout << b;
    }
  }
  return 0;
}

}  // namespace ddpsim::app
