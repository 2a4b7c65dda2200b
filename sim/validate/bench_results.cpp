#include "validate/bench_results.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "collectives/topology.hpp"
#include "config/kernel_records.hpp"
#include "config/sections.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "validate/results_reader.hpp"

namespace fs = std::filesystem;

namespace ddpsim::validate {

using core::Json;

namespace {

// Steps simulated for a case with its ranks' jitter (stragglers.steps). The median of n draws
// has a standard error of about 1.25 s / sqrt(n), s the simulated steps' spread: 0.09 s at 200,
// against the measured median's 0.5 s of a run's six steps.
constexpr int kJitterSteps = 200;
constexpr double kMaxJitter = 2.0;  // stragglers.jitter_cv's upper limit (config/sections.cpp)
// The measured median's interval: the narrowest order-statistic interval of at least this coverage
// (six steps give [min, max] at 96.9 %; five only [min, max] at 93.8 %, printed as such).
constexpr double kIntervalLevel = 0.95;

// A case's timed-step array (step_times_s, compute_only_times_s, no_ddp_step_times_s), empty when
// absent; check_results has refused any entry that is not a time.
std::vector<double> timed_steps(const Json& step_case, const char* key) {
  std::vector<double> ts;
  if (step_case.contains(key) && step_case[key].is_array())
    for (const auto& t : step_case[key]) ts.push_back(t.get<double>());
  return ts;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const Json& need(const Json& j, const std::string& key, const std::string& path, const std::string& file) {
  if (!j.is_object() || !j.contains(key))
    throw core::ConfigError(file + ": " + path + "/" + key + ": missing; a ddpbench-results/1 file needs it");
  return j.at(key);
}

double need_number(const Json& j, const std::string& key, const std::string& path, const std::string& file) {
  const Json& v = need(j, key, path, file);
  if (!v.is_number())
    throw core::ConfigError(file + ": " + path + "/" + key + ": " + core::short_dump(v) + " is not a number");
  return v.get<double>();
}

// The bundled GPU whose name matches the device name the benchmark recorded ("NVIDIA H200",
// "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB", ...).
std::string gpu_for(const config::Catalog& cat, const std::string& device) {
  // The exact device-name table first (the one a measured profile's GPU is identified by, so a
  // profile validated on its own machine is not transferred), then the token match.
  if (const std::string exact = config::gpu_preset_for_device(device); !exact.empty()) {
    const auto names = cat.names(config::Kind::GPU);
    if (std::find(names.begin(), names.end(), exact) != names.end()) return exact;
  }
  const std::string d = lower(device);
  std::string best;
  size_t best_score = 0;
  for (const auto& name : cat.names(config::Kind::GPU)) {
    // Every dash-separated token of the bundled name must appear in the device name.
    size_t score = 0;
    bool all = true;
    std::stringstream ss(name);
    std::string tok;
    while (std::getline(ss, tok, '-')) {
      if (d.find(tok) == std::string::npos)
        all = false;
      else
        score += tok.size();
    }
    if (all && score > best_score) best = name, best_score = score;
  }
  if (best.empty()) {
    // Fall back to the family token alone (h200, h100, a100, v100, 4090).
    for (const auto& name : cat.names(config::Kind::GPU)) {
      const std::string family = name.substr(0, name.find('-'));
      if (d.find(family) != std::string::npos) return name;
    }
    std::string list;
    for (const auto& n : cat.names(config::Kind::GPU)) list += (list.empty() ? "" : ", ") + n;
    throw core::ConfigError("validate: no bundled GPU matches \"" + device + "\" (bundled: " + list +
                            "); give --cluster with a cluster file for this machine");
  }
  return best;
}

}  // namespace

double measured_optimizer_step(const Json& c, const std::string& file, size_t i) {
  const std::string p = "/step/cases/" + std::to_string(i);
  if (!c.is_object()) return 0;
  // Since 2 Dec 2026 the median over the compute-only steps of (step end - backward end).
  if (c.contains("compute_only_optimizer_s")) {
    const Json& v = c["compute_only_optimizer_s"];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      throw core::ConfigError(file + ": " + p + "/compute_only_optimizer_s: " + core::short_dump(v) +
                              " is not allowed; expected a time in seconds > 0");
    return v.get<double>();
  }
  // Before: the compute-only step's median less the median end of its backward.
  if (!c.contains("compute_only_backward_end_s") || !c.contains("compute_only_s")) return 0;
  const Json& end = c["compute_only_backward_end_s"];
  const double step = need_number(c, "compute_only_s", p, file);
  const double bwd = need_number(c, "compute_only_backward_end_s", p, file);
  if (!(bwd > 0) || !(bwd < step))
    throw core::ConfigError(file + ": " + p + "/compute_only_backward_end_s: " + core::short_dump(end) +
                            " is not a time after the step start and before its end (compute_only_s " +
                            core::short_dump(c["compute_only_s"]) + "); expected 0 < it < compute_only_s");
  return step - bwd;
}

double rank_jitter_cv(const Json& c, int ranks, const std::string& file, size_t i) {
  if (!c.is_object() || !c.contains("rank_compute_only_times_s")) return 0;
  const std::string p = "/step/cases/" + std::to_string(i) + "/rank_compute_only_times_s";
  const Json& t = c["rank_compute_only_times_s"];
  const auto bad = [&](const std::string& where, const Json& v, const std::string& allowed) {
    return core::ConfigError(file + ": " + where + ": " + core::short_dump(v) + " is not allowed; expected " + allowed);
  };
  if (!t.is_array() || static_cast<int>(t.size()) != ranks)
    throw bad(p, t, "one array of compute-only step times per rank (" + std::to_string(ranks) + " arrays)");
  size_t steps = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    const std::string rp = p + "/" + std::to_string(r);
    if (!t[r].is_array() || t[r].empty() || (r > 0 && t[r].size() != steps))
      throw bad(rp, t[r], "a non-empty array of times in seconds, as long as rank 0's (" + std::to_string(steps) + ")");
    steps = t[r].size();
    for (size_t k = 0; k < t[r].size(); ++k) {
      const Json& v = t[r][k];
      if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= 1e6))
        throw bad(rp + "/" + std::to_string(k), v, "a time in seconds > 0 and <= 1e6");
    }
  }
  if (ranks < 2 || steps < 3) return 0;
  double ss = 0;
  for (size_t k = 0; k < steps; ++k) {
    double m = 0;
    for (const auto& rank : t) m += std::log(rank[k].get<double>());
    m /= static_cast<double>(ranks);
    for (const auto& rank : t) ss += std::pow(std::log(rank[k].get<double>()) - m, 2);
  }
  const double sigma2 = ss / (static_cast<double>(steps) * (ranks - 1));
  return std::sqrt(std::expm1(sigma2));
}

Plan plan(const config::Catalog& cat, const Json& doc, const std::string& file, const std::string& cluster_arg,
          double tolerance, bool given_no_ddp_step) {
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "ddpbench-results/1")
    throw core::ConfigError(
        file + ": /format: " +
        (doc.is_object() && doc.contains("format") ? core::short_dump(doc["format"]) : std::string("missing")) +
        "; expected \"ddpbench-results/1\" (written by bench/ddpbench or scripts/ddp_cpu_bench.py)");
  if (!(tolerance > 0) || !std::isfinite(tolerance))
    throw core::ConfigError("--tolerance: " + std::to_string(tolerance) +
                            " is not allowed; expected a finite number > 0");
  check_results(doc, file);
  Plan p;
  p.file = file;
  p.mode = need(doc, "mode", "", file).get<std::string>();
  if (p.mode != "step" && p.mode != "allreduce")
    throw core::ConfigError(file + ": /mode: \"" + p.mode +
                            "\" has nothing to validate against a simulation; expected \"step\" or \"allreduce\" "
                            "(use a \"layers\" result's model as a measured profile instead)");
  const Json& hw = need(doc, "hardware", "", file);
  const bool cpu = hw.value("device", "") == "cpu";
  const int ranks = static_cast<int>(need_number(hw, "ngpus", "/hardware", file));
  const int nodes = hw.value("nnodes", 1);
  if (ranks < 1 || nodes < 1 || ranks % nodes != 0)
    throw core::ConfigError(file + ": /hardware: ngpus " + std::to_string(ranks) + " and nnodes " +
                            std::to_string(nodes) + " do not describe nodes of equal size");
  p.ranks = ranks;

  // The cluster: from the run's own calibration (CPU), from --cluster, or from the GPU's name.
  Json cluster;
  Json collective = Json::object();
  Json compute = Json::object();
  Json cpu_contention = {{"enabled", false}};
  int gloo_threads = 2;  // CPU runs: ProcessGroupGloo's worker threads (streams.comm_workers)
  if (cpu) {
    const Json& cal = need(doc, "calibration", "", file);
    const Json& fit = need(cal, "ring_fit", "/calibration", file);
    const double copy_bw = need_number(cal, "copy_bandwidth_Bps", "/calibration", file);
    const double overhead = need_number(cal, "op_overhead_s", "/calibration", file);
    // One rank: nothing crosses the link and the fit has no bandwidth (null); the copy rate stands in.
    const double bw = ranks == 1 && fit.is_object() && fit.contains("bandwidth_Bps") && fit["bandwidth_Bps"].is_null()
                          ? copy_bw
                          : need_number(fit, "bandwidth_Bps", "/calibration/ring_fit", file);
    const double alpha = need_number(fit, "step_latency_s", "/calibration/ring_fit", file);
    const double base = need_number(fit, "base_latency_s", "/calibration/ring_fit", file);
    auto q = [](double v, const char* unit) {
      char b[64];
      std::snprintf(b, sizeof b, "%.17g%s", v, unit);
      return std::string(b);
    };
    // A copy of B bytes reads and writes them: the memory rate is twice the copy rate.
    cluster = {{"name", "cpu-loopback"},
               {"gpu",
                {{"name", hw.value("cpu_name", "cpu")},
                 {"arch", "ampere"},
                 {"peak_flops", {{"float32", "1TFLOPS"}}},
                 {"hbm_bandwidth", q(2 * copy_bw, "Bps")}}},
               {"nodes", 1},
               {"gpus_per_node", ranks},
               {"intra_node",
                {{"fabric", "pcie"},
                 {"link",
                  {{"name", "gloo-loopback"},
                   {"kind", "ethernet"},
                   {"bandwidth", q(bw, "Bps")},
                   {"latency", q(alpha, "s")}}}}}};
    collective = {{"model", "ring"}, {"base_latency", q(base, "s")}};
    // The all-reduce times the run measured between its ranks: the collective takes them (log-log
    // interpolation) instead of the ring fit, which weighs every size alike and misses the bucket
    // sizes by up to a quarter (gloo over loopback: ~0.3 ms floor, ~1.1 GB/s above 1 MiB).
    if (ranks > 1 && cal.contains("allreduce")) {
      const Json& sweep = cal["allreduce"];
      if (!sweep.is_array())
        throw core::ConfigError(file + ": /calibration/allreduce: " + core::short_dump(sweep) +
                                " is not allowed; expected an array of {size_bytes, time_s, ranks} rows");
      Json rows = Json::array();
      double last = 0;
      for (size_t i = 0; i < sweep.size(); ++i) {
        const std::string rp = "/calibration/allreduce/" + std::to_string(i);
        if (!sweep[i].is_object())
          throw core::ConfigError(file + ": " + rp + ": " + core::short_dump(sweep[i]) +
                                  " is not allowed; expected an object {size_bytes, time_s, ranks}");
        if (sweep[i].contains("ranks") && need_number(sweep[i], "ranks", rp, file) != ranks) continue;  // another size
        const double bytes = need_number(sweep[i], "size_bytes", rp, file);
        const double secs = need_number(sweep[i], "time_s", rp, file);
        if (!(bytes > last) || !(bytes <= core::kMaxNumber))
          throw core::ConfigError(file + ": " + rp + "/size_bytes: " + core::short_dump(sweep[i]["size_bytes"]) +
                                  " is not allowed; expected a size above the previous row's (" +
                                  core::short_dump(Json(last)) + ", rows ascending) and <= 1e18");
        if (!(secs > 0) || !(secs <= 1e6))
          throw core::ConfigError(file + ": " + rp + "/time_s: " + core::short_dump(sweep[i]["time_s"]) +
                                  " is not allowed; expected a time > 0 and <= 1e6 s");
        last = bytes;
        rows.push_back({{"bytes", bytes}, {"seconds", secs}});
      }
      if (rows.size() >= 2) collective["measured_allreduce"] = rows;
    }
    // ProcessGroupGloo's worker threads take the queued collectives in order, as many at once as
    // there are threads (streams.comm_workers): torch/csrc/distributed/c10d/init.cpp sets
    // options->threads = devices.size() * 2, 2 for the default group in torch 1.13 and 2.x. The
    // run records its group's count (hardware.gloo_threads, since 2 Dec 2026); before, 2.
    if (hw.contains("gloo_threads") && !hw["gloo_threads"].is_null()) {
      const Json& g = hw["gloo_threads"];
      if (!g.is_number_integer() || g.get<long long>() < 1 || g.get<long long>() > 16)
        throw core::ConfigError(file + ": /hardware/gloo_threads: " + core::short_dump(g) +
                                " is not allowed; expected an integer from 1 to 16 (ProcessGroupGloo's worker "
                                "threads), or null");
      gloo_threads = g.get<int>();
    }
    // Each rank runs its compute threads and a gloo thread at work (the others wait on the
    // socket); when they outnumber the cores, the two share them while a collective runs beside
    // compute: each gets cores / threads of them.
    const double threads = ranks * (hw.value("threads_per_rank", 1) + 1.0);
    const double cores = hw.value("logical_cpus", 0);
    const double share = cores > 0 ? std::max(1.0, threads / cores) : 1.0;
    cpu_contention = {{"enabled", share > 1.0}, {"compute_slowdown", share}, {"comm_slowdown", share}};
    compute = {{"memory_efficiency", 1.0}, {"kernel_overhead", q(overhead, "s")}};
    p.cluster_note = "CPU ranks over gloo/loopback, figures from the run's calibration";
    // A per-bucket host time from the run's calibration (seconds, 0 to 1, or null: absent), set as
    // a collective field and, where `named`, in the header: `before` MICROSECONDS `after`.
    const auto calibrated = [&](const std::string& key, const char* field, const std::string& expected,
                                const std::string& before, const std::string& after, bool named) {
      if (!cal.contains(key) || cal[key].is_null()) return;
      const Json& v = cal[key];
      if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() <= 1))
        throw core::ConfigError(file + ": /calibration/" + key + ": " + core::short_dump(v) +
                                " is not allowed; expected " + expected + " in seconds, 0 to 1, or null");
      collective[field] = q(v.get<double>(), "s");
      if (!named) return;
      char us[32];
      std::snprintf(us, sizeof us, "%.1f", v.get<double>() * 1e6);
      p.cluster_note += before + us + after;
    };
    // The collective call on the backward thread, timed amid compute (scripts/ddp_cpu_bench.py
    // since 6 Dec 2026): the call hands the all-reduce to gloo's worker thread, idle meanwhile,
    // which the sweep's back-to-back calls (the ring fit's base latency) do not show.
    calibrated("allreduce_call_s", "host_call", "the call's time", "; each bucket's collective call ",
               " us on the backward thread (measured)", true);
    // A one-rank run's Python hook: what it costs the backward per bucket beyond the builtin path, timed on a
    // probe model (scripts/ddp_cpu_bench.py since 6 Dec 2026; null at larger world sizes, and
    // charged at world size 1 only).
    calibrated("hook_callback_s", "host_callback", "the callback's cost", "; the Python comm hook ",
               " us per bucket beyond the builtin path (measured)", ranks == 1);
  } else if (!cluster_arg.empty()) {
    cluster = cluster_arg;
    p.cluster_note = "--cluster " + cluster_arg;
  } else {
    const std::string gpu = gpu_for(cat, hw.value("gpu_name", ""));
    const bool p2p = hw.contains("nvlink") && hw["nvlink"].value("all_pairs_peer_capable", false);
    const auto g = cat.load_gpu(cat.resolve(config::Kind::GPU, gpu));
    // NVLink generation and count by architecture for SXM parts (NVSwitch systems).
    std::string link = "nvlink3";
    int links = 12;
    if (g.arch == config::GpuArch::HOPPER) link = "nvlink4", links = 18;
    if (g.arch == config::GpuArch::BLACKWELL) link = "nvlink5", links = 18;
    if (g.arch == config::GpuArch::VOLTA) link = "nvlink2", links = 6;
    Json intra = p2p && gpu.find("pcie") == std::string::npos && gpu.find("4090") == std::string::npos
                     ? Json{{"fabric", "nvswitch"}, {"link", link}, {"links_per_gpu", links}}
                     : Json{{"fabric", "pcie"}, {"link", "pcie-gen4-x16"}, {"p2p", p2p}};
    cluster = {{"name", gpu + "-node"},
               {"gpu", gpu},
               {"nodes", nodes},
               {"gpus_per_node", ranks / nodes},
               {"intra_node", intra}};
    if (nodes > 1) cluster["inter_node"] = {{"link", "ib-ndr"}, {"nics_per_node", ranks / nodes}};
    p.cluster_note = "GPU \"" + gpu + "\" matched from \"" + hw.value("gpu_name", "") + "\"";
  }

  if (given_no_ddp_step) p.cluster_note += "; compute scaled to each case's measured no-DDP step";
  if (p.mode == "step") {
    const Json& step = need(doc, "step", "", file);
    const Json& model = need(step, "model", "/step", file);
    const Json& cases = need(step, "cases", "/step", file);
    if (!cases.is_array() || cases.empty()) throw core::ConfigError(file + ": /step/cases: expected a non-empty array");
    std::string torch = hw.value("torch_version", doc.value("torch_version", ""));
    const std::string pytorch = config::pytorch_rule_version(torch);
    Json base{{"name", "validate"},
              {"model", model},
              {"cluster", cluster},
              {"collective", collective},
              {"compute", compute},
              // Neither bench computes a cross-entropy: scripts/ddp_cpu_bench.py's loss is the sum of the
              // outputs' means (export_model.output_loss), ddpbench's step starts the backward directly.
              {"training",
               {{"batch_size", model.value("measured_batch_size", model.value("batch_size", 1))},
                {"optimizer", "sgd"},
                {"loss", "none"}}},
              {"ddp", {{"pytorch_version", pytorch}}},
              {"contention", cpu ? cpu_contention : Json{{"enabled", true}}}};
    if (cpu) base["streams"] = {{"comm_workers", gloo_threads}};
    if (cpu) base["training"]["input_bytes_per_sample"] = "0B";  // the input never leaves the host
    if (doc.contains("config") && doc["config"].contains("zero_grad_set_to_none") &&
        doc["config"]["zero_grad_set_to_none"].is_boolean())
      base["training"]["zero_grad_set_to_none"] = doc["config"]["zero_grad_set_to_none"];
    // The DDP the run built: gradient views, and the comm hook it registered. scripts/ddp_cpu_bench.py
    // always registered a hook that divides the bucket in place (default_hooks.allreduce_hook plus
    // timestamps), also before it wrote config.comm_hook.
    const Json cfg = doc.value("config", Json::object());
    if (cfg.contains("gradient_as_bucket_view") && cfg["gradient_as_bucket_view"].is_boolean())
      base["ddp"]["gradient_as_bucket_view"] = cfg["gradient_as_bucket_view"];
    if (cfg.contains("comm_hook") && cfg["comm_hook"].is_string())
      base["ddp"]["comm_hook"] = cfg["comm_hook"];
    else if (doc.value("generator", "") == "scripts/ddp_cpu_bench.py")
      base["ddp"]["comm_hook"] = "allreduce_hook";
    for (size_t i = 0; i < cases.size(); ++i) {
      const Json& c = cases[i];
      Json d = base;
      std::string label = "default";
      if (!c.value("bucket_cap_is_default", false) && c.contains("bucket_cap_mb") && c["bucket_cap_mb"].is_number()) {
        d["ddp"]["bucket_cap_mb"] = c["bucket_cap_mb"];
        char b[32];
        std::snprintf(b, sizeof b, "%g", c["bucket_cap_mb"].get<double>());
        label = b;
      }
      // The optimizer.step() + zero_grad() the run measured (scripts/ddp_cpu_bench.py: the time from
      // the end of the backward to the end of the step, in the compute-only steps, which are not the
      // steps validated) replaces the estimate.
      if (const double opt = measured_optimizer_step(c, file, i); opt > 0) {
        char b[40];
        std::snprintf(b, sizeof b, "%.9gs", opt);
        d["training"]["measured_optimizer_step"] = b;
      }
      if (given_no_ddp_step) {
        const std::string cp = "/step/cases/" + std::to_string(i);
        const Json v = c.value("no_ddp_step_time_s", Json(nullptr));
        if (!v.is_number() || !(v.get<double>() > 0))
          throw core::ConfigError(file + ": " + cp + "/no_ddp_step_time_s: " +
                                  (c.contains("no_ddp_step_time_s") ? core::short_dump(v) : std::string("missing")) +
                                  "; --given-no-ddp-step needs the run's measured no-DDP step, a time in seconds > 0 "
                                  "(scripts/ddp_cpu_bench.py writes it since 2 Dec 2026)");
        char b[40];
        std::snprintf(b, sizeof b, "%.9gs", v.get<double>());
        d["training"]["measured_single_gpu_step"] = b;
      }
      // The ranks' own compute variation (runs that recorded it): explicit ranks with that jitter,
      // and the same case with one representative rank for the bucket timeline.
      const double jitter = rank_jitter_cv(c, ranks, file, i);
      const std::string where = file + " /step/cases/" + std::to_string(i);
      std::optional<config::Scenario> representative;
      if (jitter > 0) {
        representative = cat.scenario_from_json(d, where, fs::path(file).parent_path());
        d["stragglers"] = {{"jitter_cv", std::min(jitter, kMaxJitter)}, {"steps", kJitterSteps}};
      }
      p.steps.push_back(
          {c, label, cat.scenario_from_json(d, where, fs::path(file).parent_path()), jitter, representative});
    }
  } else {
    p.allreduce_rows = need(doc, "allreduce", "", file);
    Json sc{{"model", "resnet50"}, {"cluster", cluster}};
    auto scenario = cat.scenario_from_json(sc, file, fs::path(file).parent_path());
    p.topology = collectives::nccl_topology(scenario.cluster);
  }
  return p;
}

namespace {

Json header(const Plan& p, double tolerance) {
  return {{"results", p.file}, {"mode", p.mode}, {"cluster", p.cluster_note}, {"tolerance", tolerance}};
}

std::string percent_or_na(const Json& v) {
  return v.is_number() ? std::to_string(static_cast<int>(std::lround(v.get<double>() * 100))) + "%" : "n/a";
}

void verdict(report::Rendered& r, bool ok) {
  r.doc["within_tolerance"] = ok;
  r.text += ok ? "  all within tolerance\n" : "  BEYOND TOLERANCE\n";
  r.status = ok ? 0 : 3;
}

}  // namespace

double halves_ratio(std::vector<double> times) {
  if (times.size() < 4) return 1.0;
  std::sort(times.begin(), times.end());
  const size_t h = times.size() / 2;
  const std::vector<double> low(times.begin(), times.begin() + static_cast<long>(h));
  const std::vector<double> high(times.end() - static_cast<long>(h), times.end());
  const double lo = core::median(low);
  return lo > 0 ? core::median(high) / lo : 1.0;
}

Json last_bucket_parts(const Json& measured, const Json& predicted, double measured_step, double predicted_step,
                       int ranks) {
  if (ranks < 2 || !measured.contains("buckets") || !measured["buckets"].is_array() || !predicted.contains("buckets") ||
      !predicted["buckets"].is_array())
    return nullptr;
  const Json& mb = measured["buckets"];
  const Json& pb = predicted["buckets"];
  if (mb.empty() || mb.size() != pb.size()) return nullptr;  // another plan: no bucket to pair
  auto num = [](const Json& b, const char* k) {
    return b.contains(k) && b[k].is_number() ? b[k].get<double>() : std::nan("");
  };
  size_t last = 0;
  for (size_t b = 1; b < mb.size(); ++b)
    if (num(mb[b], "end_s") > num(mb[last], "end_s")) last = b;
  const double mr = num(mb[last], "ready_s"), me = num(mb[last], "end_s");
  const double pr = num(pb[last], "ready_s"), pe = num(pb[last], "end_s");
  if (!std::isfinite(mr) || !std::isfinite(me) || !std::isfinite(pr) || !std::isfinite(pe) || me < mr) return nullptr;
  return {{"index", static_cast<int>(last)},
          {"bytes", num(mb[last], "bytes") >= 0 ? num(mb[last], "bytes") : 0.0},
          {"ready_measured_s", mr},
          {"ready_predicted_s", pr},
          {"allreduce_measured_s", me - mr},
          {"allreduce_predicted_s", pe - pr},
          {"after_measured_s", measured_step - me},
          {"after_predicted_s", predicted_step - pe}};
}

bool same_buckets(const Json& a, const Json& b) {
  const auto list = [](const Json& c) -> const Json* {
    return c.contains("buckets") && c["buckets"].is_array() && !c["buckets"].empty() ? &c["buckets"] : nullptr;
  };
  const Json *ba = list(a), *bb = list(b);
  if (!ba || !bb || ba->size() != bb->size()) return false;
  if (a.contains("limits_bytes") && b.contains("limits_bytes") && a["limits_bytes"] != b["limits_bytes"]) return false;
  for (size_t k = 0; k < ba->size(); ++k) {
    const Json &x = (*ba)[k], &y = (*bb)[k];
    if (!x.is_object() || !y.is_object()) return false;
    for (const char* f : {"bytes", "num_tensors"}) {
      const bool hx = x.contains(f) && x[f].is_number(), hy = y.contains(f) && y[f].is_number();
      if (hx != hy || (hx && x[f].get<double>() != y[f].get<double>())) return false;
      if (!hx && std::string(f) == "bytes") return false;  // no sizes: nothing to tell them apart by
    }
  }
  return true;
}

report::Rendered compare_steps(const Plan& plan, const std::vector<Json>& predicted, double tolerance,
                               const std::vector<Json>& representative) {
  if (predicted.size() != plan.steps.size())
    throw core::SimulationError("validate: " + std::to_string(predicted.size()) + " predictions for " +
                                std::to_string(plan.steps.size()) + " cases");
  const std::string& file = plan.file;
  std::ostringstream out;
  out << "validate " << file << ": " << plan.mode << ", " << plan.ranks << " rank(s); " << plan.cluster_note << "\n";
  out << "  cap MiB   step meas    step pred   err %   exposed meas  exposed pred   overlap meas/pred   bucket end "
         "err % (median)\n";
  Json rows = Json::array();
  std::vector<double> step_errors, overhead_errors;
  std::vector<double> measured_steps, predicted_steps;  // per case, as compared (the repeats below)
  size_t interval_cases = 0, interval_inside = 0;
  bool ok = true;
  for (size_t i = 0; i < predicted.size(); ++i) {
    const Json& p = predicted[i];
    const Json& m = plan.steps[i].measured;
    const double ms = need_number(m, "step_time_s", "/step/cases/" + std::to_string(i), file);
    // With the ranks' jitter the prediction is the median of its simulated steps, as the measured
    // step is the median of the run's.
    const double jitter = plan.steps[i].jitter_cv;
    const bool p50 = jitter > 0 && p.contains("step_time_p50_s") && p["step_time_p50_s"].is_number();
    const double ps = p50 ? p["step_time_p50_s"].get<double>() : p["step_time_s"].get<double>();
    const double step_err = (ps - ms) / ms;
    step_errors.push_back(std::fabs(step_err));
    measured_steps.push_back(ms);
    predicted_steps.push_back(ps);
    const double me = m.value("exposed_comm_s", 0.0);
    // Exposed communication as the measurement defines it: the step over the compute-only step
    // (with jitter, of the median step; the straggler wait is in it on both sides).
    const double pe = p50 ? ps - p.value("compute_only_s", ps) : p["exposed_comm_s"].get<double>();
    Json mo = m.value("overlap_ratio", Json(nullptr)), po = p["overlap_ratio"];
    if (const double alone = p.value("comm_alone_s", 0.0); p50 && alone > 0) po = 1.0 - pe / alone;
    // The bucket timeline: the representative rank's where the case has one.
    const Json* rep = i < representative.size() && representative[i].is_object() ? &representative[i] : nullptr;
    const Json& pt = rep ? *rep : p;
    const double pt_step = rep ? (*rep)["step_time_s"].get<double>() : ps;
    // Per-bucket end times: the measured and predicted buckets come from the same plan.
    std::vector<double> bucket_errs;
    Json brows = Json::array();
    if (m.contains("buckets") && m["buckets"].is_array()) {
      const auto& mb = m["buckets"];
      const auto& pb = pt["buckets"];
      for (size_t b = 0; b < std::min(mb.size(), pb.size()); ++b) {
        const double me_end = mb[b].value("end_s", 0.0), pe_end = pb[b]["end_s"].get<double>();
        const double err = me_end > 0 ? (pe_end - me_end) / me_end : 0.0;
        if (me_end > 0) bucket_errs.push_back(std::fabs(err));
        Json row{{"index", b},
                 {"bytes_measured", mb[b].value("bytes", 0.0)},
                 {"bytes_predicted", pb[b]["bytes"]},
                 {"end_measured_s", me_end},
                 {"end_predicted_s", pe_end},
                 {"relative_error", err}};
        // When the bucket was ready (its last gradient's hook) and when its all-reduce started, both
        // sides, so that a miss can be placed: in the backward before it, or in the collective.
        for (const std::string k : {"ready", "start"}) {
          if (mb[b].contains(k + "_s") && mb[b][k + "_s"].is_number()) row[k + "_measured_s"] = mb[b][k + "_s"];
          if (pb[b].contains(k + "_s") && pb[b][k + "_s"].is_number()) row[k + "_predicted_s"] = pb[b][k + "_s"];
        }
        brows.push_back(std::move(row));
      }
    }
    // DDP's own cost: measured against the same model's no-DDP steps (when the run has them),
    // predicted as the step over the step without DDP's own work (ddp_overhead_s); at world size 1
    // nothing else separates the two.
    Json overhead = nullptr;
    const double no_ddp =
        m.value("no_ddp_step_time_s", Json(nullptr)).is_number() ? m["no_ddp_step_time_s"].get<double>() : 0.0;
    const double p_ddp = p.value("ddp_overhead_s", 0.0);
    if (no_ddp > 0 && plan.ranks == 1 && ps > p_ddp) {
      const double mo_frac = ms / no_ddp - 1, po_frac = ps / (ps - p_ddp) - 1;
      overhead = {{"measured", mo_frac},
                  {"predicted", po_frac},
                  {"error_points", (po_frac - mo_frac) * 100},
                  {"measured_interval", nullptr}};
      overhead_errors.push_back(std::fabs(po_frac - mo_frac));
      // How well the run pins it: scripts/ddp_cpu_bench.py times a DDP step and a no-DDP step in
      // each round, one after the other, so step k of the two is a pair; the median of the pairs'
      // ratios has an order-statistic interval as the step's median does.
      const auto st = timed_steps(m, "step_times_s"), nt = timed_steps(m, "no_ddp_step_times_s");
      if (st.size() == nt.size() && st.size() >= 2) {
        std::vector<double> ratios;
        for (size_t k = 0; k < st.size(); ++k) ratios.push_back(st[k] / nt[k] - 1);
        const auto mi = core::median_interval(ratios, kIntervalLevel);
        overhead["measured_interval"] = {{"low", mi.low},
                                         {"high", mi.high},
                                         {"coverage", mi.coverage},
                                         {"pairs", ratios.size()},
                                         {"prediction_inside", po_frac >= mi.low && po_frac <= mi.high}};
      }
    }
    const bool within = std::fabs(step_err) <= tolerance;
    ok = ok && within;
    // No bucket compared (one rank: the prediction runs no collective, so it has no bucket rows):
    // "n/a", not a perfect 0.0.
    char bucket_col[32] = "n/a";
    if (!bucket_errs.empty()) std::snprintf(bucket_col, sizeof bucket_col, "%.1f", core::median(bucket_errs) * 100);
    char line[240];
    std::snprintf(line, sizeof line, "  %7s %11s %11s %7.1f %13s %13s   %8s / %-8s   %6s%s%s\n",
                  plan.steps[i].label.c_str(), core::format_time(ms).c_str(), core::format_time(ps).c_str(),
                  step_err * 100, core::format_time(me).c_str(), core::format_time(pe).c_str(),
                  percent_or_na(mo).c_str(), percent_or_na(po).c_str(), bucket_col,
                  within ? "" : "   <- beyond tolerance",
                  plan.ranks > 1 && m.contains("buckets") && m["buckets"].size() != pt["buckets"].size()
                      ? "   (bucket count differs)"
                      : "");
    out << line;
    if (jitter > 0) {
      char jl[320];
      std::snprintf(
          jl, sizeof jl,
          "          ranks' own compute variation: %.1f %% (compute-only steps, the part the ranks do not "
          "share); simulated as stragglers.jitter_cv, median of %d steps%s\n",
          jitter * 100, kJitterSteps,
          jitter > kMaxJitter ? "; capped at 200 % (the setting's limit): a run this uneven is no measurement" : "");
      out << jl;
    }
    if (overhead.is_object()) {
      char ol[160];
      std::snprintf(ol, sizeof ol, "          DDP over no DDP: measured %.2f %%, predicted %.2f %% (%+.2f points)\n",
                    overhead["measured"].get<double>() * 100, overhead["predicted"].get<double>() * 100,
                    overhead["error_points"].get<double>());
      out << ol;
      if (const Json& oi = overhead["measured_interval"]; oi.is_object()) {
        std::snprintf(ol, sizeof ol,
                      "          its %.1f %% interval over %zu paired steps: %.2f .. %.2f %%; prediction %s it\n",
                      oi["coverage"].get<double>() * 100, oi["pairs"].get<size_t>(), oi["low"].get<double>() * 100,
                      oi["high"].get<double>() * 100, oi["prediction_inside"].get<bool>() ? "inside" : "outside");
        out << ol;
      }
    }
    // The compute-only steps part by part (scripts/ddp_cpu_bench.py measures them between the steps
    // validated): a wrong input (a profile timed under other load) shows here before it shows in
    // the step.
    Json parts = nullptr;
    if (m.value("compute_only_forward_s", Json(nullptr)).is_number() && m.value("compute_only_s", 0.0) > 0) {
      const double mf = m["compute_only_forward_s"].get<double>(), pf = p.value("forward_s", 0.0);
      const double mc = m["compute_only_s"].get<double>(), pc = p.value("compute_only_s", 0.0);
      parts = {{"forward_measured_s", mf},
               {"forward_predicted_s", pf},
               {"compute_only_measured_s", mc},
               {"compute_only_predicted_s", pc},
               {"optimizer_predicted_s", p.value("optimizer_s", 0.0)}};
      char pl[200];
      std::snprintf(pl, sizeof pl,
                    "          compute-only steps: forward %s meas / %s pred (%+.1f %%), step %s / %s (%+.1f %%)\n",
                    core::format_time(mf).c_str(), core::format_time(pf).c_str(), mf > 0 ? (pf / mf - 1) * 100 : 0.0,
                    core::format_time(mc).c_str(), core::format_time(pc).c_str(), (pc / mc - 1) * 100);
      out << pl;
    }
    // Where the step's error sits, along the bucket the step waited on last (the one whose
    // all-reduce ended last in the measured step): when it was ready, its all-reduce from ready to
    // end, and the rest of the step after it. The three differences add up to the step's error.
    Json last = last_bucket_parts(m, pt, ms, pt_step, plan.ranks);
    // With jitter the parts are the representative rank's; the ranks' variation (the median
    // jittered step over the representative one) closes the sum to the step's error.
    const double variation = ps - pt_step;
    if (last.is_object() && rep) last["rank_variation_s"] = variation;
    if (last.is_object()) {
      const auto ms_of = [&](const char* k) { return core::format_time(last[k].get<double>()); };
      const auto diff = [&](const char* pk, const char* mk) {
        return (last[pk].get<double>() - last[mk].get<double>()) * 1e3;
      };
      char var[80] = "";
      if (rep) std::snprintf(var, sizeof var, " %+.1f (the ranks' variation)", variation * 1e3);
      char ll[480];
      std::snprintf(
          ll, sizeof ll,
          "          bucket that ended last (%d, %s): ready %s / %s, ready to end %s / %s, end to step end %s / "
          "%s (meas / pred%s), error %+.1f %+.1f %+.1f%s = %+.1f ms\n",
          last["index"].get<int>(), core::format_bytes(last["bytes"].get<double>()).c_str(),
          ms_of("ready_measured_s").c_str(), ms_of("ready_predicted_s").c_str(), ms_of("allreduce_measured_s").c_str(),
          ms_of("allreduce_predicted_s").c_str(), ms_of("after_measured_s").c_str(), ms_of("after_predicted_s").c_str(),
          rep ? ", pred: one representative rank" : "", diff("ready_predicted_s", "ready_measured_s"),
          diff("allreduce_predicted_s", "allreduce_measured_s"), diff("after_predicted_s", "after_measured_s"), var,
          (ps - ms) * 1e3);
      out << ll;
    }
    // Timed steps in two speeds (scripts/ddp_cpu_bench.py's step_times_s, compute_only_times_s):
    // the machine changed speed during the run, so the case's measurement is not one machine's.
    double slow_phase = 1.0;
    for (const char* key : {"step_times_s", "compute_only_times_s"})
      slow_phase = std::max(slow_phase, halves_ratio(timed_steps(m, key)));
    if (slow_phase >= kSlowPhaseRatio) {
      char wl[260];
      std::snprintf(wl, sizeof wl,
                    "          warning: the slower half of the timed steps took %.2fx the faster half: the machine "
                    "changed speed during the run; rerun this on an idle machine before trusting it\n",
                    slow_phase);
      out << wl;
    }
    // How well the run itself pins its median step: the order-statistic interval of step_times_s
    // (core::median_interval). A prediction inside it differs from the measurement by less than the
    // run's own step-to-step spread resolves; a change of the machine between runs is not in it.
    Json interval = nullptr;
    if (const auto ts = timed_steps(m, "step_times_s"); ts.size() >= 2) {
      const auto mi = core::median_interval(ts, kIntervalLevel);
      const double mid = core::median(ts);  // step_time_s in the benches' files; the steps' own where not
      const bool inside = ps >= mi.low && ps <= mi.high;
      interval = {{"low_s", mi.low},
                  {"high_s", mi.high},
                  {"coverage", mi.coverage},
                  {"steps", ts.size()},
                  {"prediction_inside", inside}};
      ++interval_cases;
      if (inside) ++interval_inside;
      char il[260];
      std::snprintf(il, sizeof il,
                    "          measured median's %.1f %% interval over %zu steps: %s .. %s (%+.1f .. %+.1f %%); "
                    "prediction %s it\n",
                    mi.coverage * 100, ts.size(), core::format_time(mi.low).c_str(), core::format_time(mi.high).c_str(),
                    (mi.low / mid - 1) * 100, (mi.high / mid - 1) * 100, inside ? "inside" : "outside");
      out << il;
      // A run too short or too uneven to check the tolerance at all: say so.
      if (mi.low < mid * (1 - tolerance) || mi.high > mid * (1 + tolerance)) {
        char wl[300];
        std::snprintf(wl, sizeof wl,
                      "          warning: the run pins its median only to that interval, wider than the %g %% "
                      "tolerance: time more steps (ddp_cpu_bench.py --iters, ddpbench -n)\n",
                      tolerance * 100);
        out << wl;
        interval["wider_than_tolerance"] = true;
      } else {
        interval["wider_than_tolerance"] = false;
      }
    }
    const Json bucket_end = bucket_errs.empty() ? Json(nullptr) : Json(core::median(bucket_errs));
    rows.push_back({{"bucket_cap", plan.steps[i].label},
                    {"slow_phase_ratio", slow_phase},
                    {"rank_jitter_cv", jitter > 0 ? Json(jitter) : Json(nullptr)},
                    {"compute_only_parts", parts},
                    {"ddp_overhead", overhead},
                    {"measured",
                     {{"step_time_s", ms},
                      {"exposed_comm_s", me},
                      {"overlap_ratio", mo},
                      {"compute_only_s", m.value("compute_only_s", 0.0)},
                      {"num_buckets", m.contains("buckets") ? m["buckets"].size() : 0}}},
                    {"predicted",
                     {{"step_time_s", ps},
                      {"exposed_comm_s", pe},
                      {"overlap_ratio", po},
                      {"compute_only_s", p["compute_only_s"]},
                      {"num_buckets", p["num_buckets"]}}},
                    {"step_time_error", step_err},
                    {"measured_interval", interval},
                    {"bucket_end_median_abs_error", bucket_end},
                    {"buckets", brows},
                    {"last_bucket", last},
                    {"within_tolerance", within}});
  }
  const double med = core::median(step_errors);
  out << "  median |step time error| " << (std::to_string(med * 100).substr(0, 5)) << " % over " << step_errors.size()
      << " case(s); tolerance " << tolerance * 100 << " %\n";
  if (interval_cases > 0)
    out << "  predictions inside the measured median's interval: " << interval_inside << " of " << interval_cases
        << " case(s) (the run's step-to-step spread only)\n";
  // Cases that ran the same buckets (scripts/ddp_cpu_bench.py's default cap and an explicit 25 MiB
  // under torch 1.13's rule, where both take a 1 MiB first bucket): one DDP configuration measured
  // twice in one run, so their difference is the run's own noise between cases, which per-case
  // intervals do not show (each case's steps share that case's model instance and memory).
  Json repeats = Json::array();
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (size_t j = i + 1; j < plan.steps.size(); ++j) {
      const Json &a = plan.steps[i].measured, &b = plan.steps[j].measured;
      if (!same_buckets(a, b)) continue;
      const double ma = measured_steps[i], mb = measured_steps[j];
      const double pa = predicted_steps[i], pb = predicted_steps[j];
      const double apart = std::max(ma, mb) / std::min(ma, mb) - 1, papart = std::max(pa, pb) / std::min(pa, pb) - 1;
      repeats.push_back({{"cases", {i, j}},
                         {"bucket_caps", {plan.steps[i].label, plan.steps[j].label}},
                         {"measured_step_time_s", {ma, mb}},
                         {"predicted_step_time_s", {pa, pb}},
                         {"measured_apart", apart},
                         {"predicted_apart", papart}});
      char rl[360];
      std::snprintf(rl, sizeof rl,
                    "  the same buckets measured twice (caps %s and %s): %s and %s, %.1f %% apart (predicted %.1f %%): "
                    "step differences between this run's cases below that are its own noise\n",
                    plan.steps[i].label.c_str(), plan.steps[j].label.c_str(), core::format_time(ma).c_str(),
                    core::format_time(mb).c_str(), apart * 100, papart * 100);
      out << rl;
    }
  report::Rendered r;
  r.doc = header(plan, tolerance);
  r.doc["cases"] = rows;
  r.doc["median_abs_step_time_error"] = med;
  r.doc["predictions_inside_measured_interval"] =
      interval_cases > 0 ? Json{{"inside", interval_inside}, {"cases", interval_cases}} : Json(nullptr);
  r.doc["repeated_configurations"] = repeats;
  if (!overhead_errors.empty()) {
    r.doc["median_abs_ddp_overhead_error"] = core::median(overhead_errors);
    char dl[96];
    std::snprintf(dl, sizeof dl, "  median |DDP-over-no-DDP error| %.2f points over %zu case(s)\n",
                  core::median(overhead_errors) * 100, overhead_errors.size());
    out << dl;
  }
  r.text = out.str();
  verdict(r, ok);
  return r;
}

report::Rendered compare_allreduce(const Plan& plan, double tolerance) {
  std::vector<double> errs;
  Json rows = Json::array();
  std::ostringstream out;
  const int ranks = plan.ranks;
  out << "validate " << plan.file << ": allreduce, " << ranks << " ranks; " << plan.cluster_note << "\n";
  out << "        size   busbw meas   busbw pred   err %\n";
  for (const auto& r : plan.allreduce_rows) {
    const double size = r.value("size_bytes", 0.0);
    const Json& oop = r.contains("out_of_place") ? r["out_of_place"] : r;
    const double t = oop.value("time_s", oop.value("time_us", 0.0) * 1e-6);
    if (size <= 0 || t <= 0 || ranks < 2) continue;
    const double meas = collectives::busbw_allreduce(collectives::algbw(size, t), ranks);
    const double pred = collectives::busbw_allreduce(
        collectives::algbw(size, collectives::predict_allreduce(plan.topology, size).time), ranks);
    const double err = (pred - meas) / meas;
    errs.push_back(std::fabs(err));
    char line[160];
    std::snprintf(line, sizeof line, "%12.0f %12.2f %12.2f %7.1f\n", size, meas / 1e9, pred / 1e9, err * 100);
    out << line;
    rows.push_back({{"size_bytes", size},
                    {"busbw_measured_GBps", meas / 1e9},
                    {"busbw_predicted_GBps", pred / 1e9},
                    {"relative_error", err}});
  }
  const double med = core::median(errs);
  out << "  median |busbw error| " << std::to_string(med * 100).substr(0, 5) << " % over " << errs.size() << " sizes\n";
  report::Rendered r;
  r.doc = header(plan, tolerance);
  r.doc["rows"] = rows;
  r.doc["median_abs_busbw_error"] = med;
  r.text = out.str();
  verdict(r, !errs.empty() && med <= tolerance);
  return r;
}

}  // namespace ddpsim::validate
