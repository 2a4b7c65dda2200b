#include "compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "compare/decide.hpp"
#include "config/fabric_spec.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "report/csv.hpp"
#include "report/prediction.hpp"

namespace ddpsim::compare {

using core::Json;

namespace {

constexpr const char* kClusterForm =
    "[LABEL=]CLUSTER[:PATH=VALUE[,PATH=VALUE...]], e.g. dgx-h100 or "
    "'ndr-2:1=dgx-h100:fabric.topology=fat_tree,fabric.oversubscription=2:1'";

bool path_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && ((c >= '0' && c <= '9') || c == '.'));
}

// Does `s` at `pos` start with `PATH=` (an override's path)?
bool starts_override(const std::string& s, size_t pos) {
  size_t i = pos;
  if (i >= s.size() || !path_char(s[i], true)) return false;
  while (i < s.size() && path_char(s[i], false)) ++i;
  return i < s.size() && s[i] == '=';
}

double num(const Json& r, const char* k) { return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0; }
bool has_num(const Json& r, const char* k) { return r.contains(k) && r[k].is_number(); }

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string rate(double v) { return v >= 1000 ? fmt("%.0f", v) : v >= 10 ? fmt("%.1f", v) : fmt("%.3f", v); }

std::string gib(double bytes) { return fmt("%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
// A report's memory field (memory_per_gpu_bytes, gpu_memory_bytes) in GiB, "?" when it has none.
std::string gib_of(const Json& report, const char* key) {
  return report.contains(key) && report[key].is_number() ? gib(report[key].get<double>()) : "?";
}

}  // namespace

bool does_not_fit(const Json& report) {
  return report.contains("fits") && report["fits"].is_boolean() && !report["fits"].get<bool>();
}

std::string memory_note(const Json& report) {
  std::string t =
      "needs " + gib_of(report, "memory_per_gpu_bytes") + " per GPU, the GPU has " + gib_of(report, "gpu_memory_bytes");
  if (report.contains("fit_options") && report["fit_options"].is_object() &&
      report["fit_options"].value("text", std::string()) != "")
    t += "; " + report["fit_options"]["text"].get<std::string>();
  return t;
}

namespace {

std::string long_duration(double s) {
  if (s < 120) return fmt("%.1f s", s);
  if (s < 2 * 3600) return fmt("%.1f min", s / 60);
  if (s < 72 * 3600) return fmt("%.1f h", s / 3600);
  return fmt("%.1f days", s / 86400);
}

// 1e6 -> "1M", 2.5e9 -> "2.5B", 1e12 -> "1T"; below a million as written.
std::string amount_text(double n) {
  if (n >= 1e12) return fmt("%gT", n / 1e12);
  if (n >= 1e9) return fmt("%gB", n / 1e9);
  if (n >= 1e6) return fmt("%gM", n / 1e6);
  return fmt("%g", n);
}

std::string money(double v) { return v < 100 ? fmt("$%.2f", v) : fmt("$%.0f", v); }

using core::join;

// Columns right-aligned but the first (the option), each as wide as its widest cell.
std::string aligned(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                    const std::vector<std::string>& tails) {
  return core::aligned_columns(head, cells, tails, true);
}

}  // namespace

ClusterOption parse_cluster_option(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return core::ConfigError("--cluster " + text + ": " + why + "; expected " + kClusterForm);
  };
  if (text.empty()) throw bad("empty");
  ClusterOption o;
  o.text = text;
  std::string rest = text;
  // LABEL= is the text before the first '=' unless that text reads CLUSTER:PATH (an override).
  const size_t eq = rest.find('=');
  const size_t colon = eq == std::string::npos ? std::string::npos : rest.substr(0, eq).find(':');
  if (eq != std::string::npos &&
      (colon == std::string::npos || (colon + 1 < eq && !starts_override(rest.substr(0, eq) + "=", colon + 1)))) {
    o.label = rest.substr(0, eq);
    if (o.label.empty()) throw bad("empty LABEL before '='");
    rest = rest.substr(eq + 1);
  }
  const size_t c2 = rest.find(':');
  o.cluster = rest.substr(0, c2);
  if (o.cluster.empty()) throw bad("no CLUSTER name or file");
  if (o.cluster.find('=') != std::string::npos) throw bad("'" + o.cluster + "' is not a cluster name or file");
  if (c2 != std::string::npos) {
    const std::string sets = rest.substr(c2 + 1);
    if (sets.empty()) throw bad("nothing after ':'");
    size_t start = 0;
    for (size_t i = 0; i <= sets.size(); ++i) {
      if (i == sets.size() || (sets[i] == ',' && starts_override(sets, i + 1))) {
        o.overrides.push_back(sets.substr(start, i - start));
        start = i + 1;
      }
    }
    for (const auto& ov : o.overrides) {
      const size_t e = ov.find('=');
      if (!starts_override(ov, 0) || e + 1 >= ov.size()) throw bad("'" + ov + "' is not PATH=VALUE");
      const std::string path = ov.substr(0, e);
      if (path == "cluster") throw bad("'" + ov + "': give the cluster before ':', not as an override");
    }
  }
  if (o.label.empty()) o.label = text;
  return o;
}

void check_distinct_labels(const std::vector<ClusterOption>& options) {
  std::set<std::string> seen;
  std::vector<std::string> problems;
  for (const auto& o : options)
    if (!seen.insert(o.label).second)
      problems.push_back("--cluster " + o.text + ": option \"" + o.label +
                         "\" is given twice; expected distinct options (name them with LABEL=...)");
  if (!problems.empty()) throw core::ConfigError(problems);
}

std::vector<int> parse_nodes(const std::string& text) {
  const std::string allowed = "expected distinct whole numbers >= 1 separated by commas, e.g. 1,16,64";
  std::vector<int> out;
  std::set<int> seen;
  if (text.empty()) throw core::ConfigError("--nodes: empty; " + allowed);
  for (const auto& v : core::split_list(text)) {
    bool ok =
        !v.empty() && v.size() <= 7 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long n = ok ? std::stol(v) : 0;
    if (!ok || n < 1 || n > (1 << 20))
      throw core::ConfigError("--nodes " + text + ": " + (v.empty() ? std::string("an empty value") : v) +
                              " is not allowed; " + allowed + " (at most 1048576)");
    if (!seen.insert(static_cast<int>(n)).second)
      throw core::ConfigError("--nodes " + text + ": " + v + " is listed twice; " + allowed);
    out.push_back(static_cast<int>(n));
  }
  return out;
}

std::vector<Point> option_grid(size_t options, const std::vector<int>& nodes) {
  std::vector<Point> out;
  for (size_t o = 0; o < options; ++o) {
    if (nodes.empty()) out.push_back({o, 0});
    for (int n : nodes) out.push_back({o, n});
  }
  return out;
}

void inline_cluster_overrides(const config::Catalog& catalog, ClusterOption& option) {
  std::vector<std::string> own;
  for (const auto& ov : option.overrides)
    if (ov.rfind("cluster.", 0) == 0) own.push_back(ov.substr(8));
  if (own.empty()) return;
  const auto file = catalog.resolve(config::Kind::CLUSTER, option.cluster);
  Json doc = core::read_json_file(file.string());
  try {
    config::apply_overrides(doc, own);
  } catch (const core::ConfigError& e) {
    std::vector<std::string> p;
    for (const auto& m : e.problems()) p.push_back("--cluster " + option.text + ": " + m);
    throw core::ConfigError(p);
  }
  option.cluster_value = doc.dump();
}

std::vector<std::string> point_overrides(const std::vector<std::string>& global, const ClusterOption& option,
                                         int nodes) {
  std::vector<std::string> ov = global;
  ov.push_back("cluster=" + (option.cluster_value.empty() ? option.cluster : option.cluster_value));
  for (const auto& o : option.overrides)
    if (option.cluster_value.empty() || o.rfind("cluster.", 0) != 0) ov.push_back(o);
  if (nodes > 0) ov.push_back("nodes=" + std::to_string(nodes));
  return ov;
}

std::vector<std::string> baseline_overrides(const std::vector<std::string>& global, const ClusterOption& option) {
  auto ov = point_overrides(global, option, 1);
  ov.push_back("gpus_per_node=1");
  return ov;
}

OptionFacts option_facts(const config::ClusterSpec& c) {
  OptionFacts f;
  f.cluster_name = c.name;
  f.price_per_gpu_hour = c.price_per_gpu_hour;
  f.topology = config::to_string(c.inter_fabric.topology);
  const auto& spec = c.inter_fabric;
  f.capex_priced = spec.price_per_switch > 0 || spec.price_per_cable > 0 || spec.price_per_nic > 0;
  if (c.inter_link && c.inter_link->bandwidth > 0) {
    const int k = std::max(c.nics_per_node, 1);
    fabric::Fabric fab(spec, fabric::Fabric::servers_for(spec, c.nodes, k), k, c.inter_link->bandwidth);
    f.bom = fab.bom();
    f.has_fabric = true;
    // No placement to assume on one ideal switch or one node (fabric::placement_line, as `run`
    // says it); the row's placement is null there.
    if (!spec.is_single_switch() && c.nodes > 1) f.placement = config::to_string(spec.placement);
    f.routing = config::to_string(spec.routing);
    f.leaf_oversubscription = spec.leaf_oversubscription;
    f.spine_oversubscription = spec.spine_oversubscription;
    f.placement_guaranteed = spec.placement_guaranteed;
    if (!spec.is_single_switch() && !spec.placement_guaranteed && c.nodes > 1) {
      try {  // the scattered bound must be wirable (a two-tier tree may run out of spine ports)
        const fabric::FabricSpec sc = fabric::scattered_spec(spec, c.nodes, k);
        fabric::Fabric(sc, sc.servers, k, c.inter_link->bandwidth);
        f.scattered_set = fabric::scattered_overrides(spec, c.nodes, k);
      } catch (const core::ConfigError& e) {
        f.scattered_note = std::string("the scattered placement cannot be wired: ") + e.what();
      }
    }
  } else {
    f.bom.servers = c.nodes;
  }
  if (f.price_per_gpu_hour > 0) {
    f.price_source = "rent";
  } else if (c.ownership) {
    // An owned cluster is priced by what it costs to own: the servers the fabric wires (whole
    // leaves or units), their fabric and their power over the years of depreciation.
    const auto& o = *c.ownership;
    const int servers = std::max(f.bom.servers, 1);
    const double fabric_capex = f.capex_priced ? f.bom.capex : 0.0;
    f.price_per_gpu_hour = config::ownership_price_per_gpu_hour(o, servers, c.gpus_per_node, fabric_capex);
    f.price_source = "ownership";
    const double hours = o.years * 8760.0 * o.utilisation;
    f.ownership = {{"servers", servers},
                   {"server_price", o.server_price},
                   {"servers_capex", o.server_price * servers},
                   {"fabric_capex", f.capex_priced ? Json(f.bom.capex) : Json(nullptr)},
                   {"years", o.years},
                   {"utilisation", o.utilisation},
                   {"capex_per_hour", (o.server_price * servers + fabric_capex) / hours},
                   {"power_per_hour", o.server_power_kw * o.pue * o.electricity_per_kwh * servers},
                   {"price_per_gpu_hour", f.price_per_gpu_hour}};
  }
  return f;
}

double cost_per_million_samples(double price_per_hour, double step_time_s, double samples_per_step) {
  return price_per_hour * step_time_s / 3600.0 / samples_per_step * 1e6;
}

double scaling_efficiency(double samples_per_s, int world_size, double baseline_samples_per_s,
                          int baseline_world_size) {
  return (samples_per_s / world_size) / (baseline_samples_per_s / baseline_world_size);
}

Json failed_row(const Point& point, const ClusterOption& option, const std::string& error, int exit_code) {
  Json row{{"label", option.label + (point.nodes > 0 ? " x" + std::to_string(point.nodes) : std::string())},
           {"option", option.label},
           {"cluster", option.cluster},
           {"set", option.overrides},
           {"nodes", point.nodes > 0 ? Json(point.nodes) : Json(nullptr)},
           {"error", error},
           {"exit_code", exit_code}};
  return row;
}

Json compare_row(const Point& point, const ClusterOption& option, const Json& report, const Json* baseline,
                 const OptionFacts& facts, const Target& target) {
  (void)point;
  Json row = Json::object();
  // The figures every row needs: a report without one is an error, never a row of zeros.
  const std::string what =
      "--cluster " + option.text + (point.nodes > 0 ? " --nodes " + std::to_string(point.nodes) : "");
  const int world = static_cast<int>(figure(report, "world_size", what));
  const int nodes = static_cast<int>(figure(report, "nodes", what));
  for (const char* k : {"step_time_s", "samples_per_s", "samples_per_rank", "exposed_comm_s", "compute_only_s"})
    figure(report, k, what);
  row["label"] = option.label + " x" + std::to_string(nodes);
  row["option"] = option.label;
  row["cluster"] = option.cluster;
  row["set"] = option.overrides;
  // The report's fields the outputs and scripts/ddpsim-plot use, as the run wrote them.
  for (const char* k : {"scenario",       "model",          "gpu",
                        "nodes",          "gpus_per_node",  "world_size",
                        "step_time_s",    "samples_per_s",  "samples_per_rank",
                        "seq_len",        "overlap_ratio",  "exposed_comm_s",
                        "compute_only_s", "contention_s",   "comm_exposed_s",
                        "comm_alone_s",   "num_buckets",    "mfu",
                        "backend",        "ddp_overhead_s", "prediction"})
    if (report.contains(k)) row[k] = report[k];
  // Memory fit, when the run report has it (absent: unknown).
  for (const char* k : {"memory_per_gpu_bytes", "gpu_memory_bytes", "fits", "memory", "fit_options"})
    row[k] = report.contains(k) ? report[k] : Json(nullptr);
  const double sps = num(report, "samples_per_s");
  const double step = num(report, "step_time_s");
  const double samples_per_step = num(report, "samples_per_rank") * world;
  row["samples_per_step"] = samples_per_step;
  row["samples_per_s_per_gpu"] = world > 0 ? sps / world : 0.0;
  const bool seq = has_num(report, "seq_len") && num(report, "seq_len") > 0;
  const double seq_len = seq ? num(report, "seq_len") : 0.0;
  row["tokens_per_s"] = seq ? Json(sps * seq_len) : Json(nullptr);
  if (baseline && world > 0) {
    const double bsps = figure(*baseline, "samples_per_s", what + " (its 1-GPU baseline)");
    const double bworld = figure(*baseline, "world_size", what + " (its 1-GPU baseline)");
    row["baseline_samples_per_s"] = bsps;
    row["scaling_efficiency"] = scaling_efficiency(sps, world, bsps, std::max(1, static_cast<int>(bworld)));
    // A baseline that does not fit one GPU (FSDP's reason to exist) is a GPU that could hold the
    // whole job: its scaling figure is against a configuration nobody can run.
    row["baseline_fits"] = baseline->value("fits", Json(nullptr));
  } else {
    row["baseline_samples_per_s"] = nullptr;
    row["scaling_efficiency"] = nullptr;
    row["baseline_fits"] = nullptr;
  }
  const bool priced = facts.price_per_gpu_hour > 0;
  const double per_hour = facts.price_per_gpu_hour * world;
  row["price_per_gpu_hour"] = priced ? Json(facts.price_per_gpu_hour) : Json(nullptr);
  row["price_source"] = priced ? Json(facts.price_source.empty() ? "rent" : facts.price_source) : Json(nullptr);
  row["ownership"] = facts.ownership;
  row["price_per_hour"] = priced ? Json(per_hour) : Json(nullptr);
  const bool runs = step > 0 && samples_per_step > 0;
  row["cost_per_million_samples"] =
      priced && runs ? Json(cost_per_million_samples(per_hour, step, samples_per_step)) : Json(nullptr);
  row["cost_per_million_tokens"] = priced && runs && seq
                                       ? Json(cost_per_million_samples(per_hour, step, samples_per_step * seq_len))
                                       : Json(nullptr);
  if (target.kind != Target::NONE) {
    const double per_s = target.kind == Target::SAMPLES ? sps : seq ? sps * seq_len : 0.0;
    const bool known = per_s > 0;
    row["train_time_s"] = known ? Json(target.amount / per_s) : Json(nullptr);
    row["train_cost"] = known && priced ? Json(per_hour * (target.amount / per_s) / 3600.0) : Json(nullptr);
  }
  const auto& b = facts.bom;
  row["bom"] = {{"topology", facts.has_fabric ? Json(facts.topology) : Json("none")},
                {"servers", b.servers},
                {"nics", b.nics},
                {"nic_ports", b.nic_ports},
                {"leaves", b.leaves},
                {"spines", b.spines},
                {"cores", b.cores},
                {"switches", b.switches()},
                {"cables_nic_leaf", b.cables_nic_leaf},
                {"cables_leaf_spine", b.cables_leaf_spine},
                {"cables_spine_core", b.cables_spine_core},
                {"cables", b.cables()},
                {"switch_ports_used", b.switch_ports_used},
                {"capex", facts.capex_priced ? Json(b.capex) : Json(nullptr)},
                {"routing", facts.has_fabric ? Json(facts.routing) : Json(nullptr)},
                {"leaf_oversubscription", facts.leaf_oversubscription},
                {"spine_oversubscription", facts.spine_oversubscription}};
  row["placement"] = {{"assumed", facts.placement.empty() ? Json(nullptr) : Json(facts.placement)},
                      {"guaranteed", facts.placement_guaranteed},
                      {"scattered", nullptr}};
  if (!facts.scattered_set.empty()) row["placement"]["scattered_set"] = facts.scattered_set;
  if (!facts.scattered_note.empty()) row["placement"]["note"] = facts.scattered_note;
  row["run"] = report;
  return row;
}

namespace {

// Bytes per step on link classes above the leaves (fat-tree spines and cores): zero when the
// placement keeps every collective's traffic under one leaf.
double bytes_above_leaves(const Json& run) {
  double sum = 0;
  if (!run.contains("links") || !run["links"].is_array()) return 0;
  for (const auto& c : run["links"]) {
    const std::string cls = c.value("class", "");
    if (cls == "leaf up" || cls == "spine down" || cls == "spine up" || cls == "core down")
      sum += c.value("bytes", 0.0);
  }
  return sum;
}

// The link class whose busiest link carries most above its class's mean: ECMP hashing that lands
// several flows on one uplink while others idle. {class, ratio} or null when the spread is even.
Json ecmp_collision(const Json& run) {
  Json out = nullptr;
  double worst = 1.25;  // below 25 % over the mean: an even spread, not a collision
  if (!run.contains("links") || !run["links"].is_array()) return out;
  for (const auto& c : run["links"]) {
    if (!c.contains("busiest_link") || !c["busiest_link"].is_object()) continue;
    const std::string cls = c.value("class", "");
    if (cls != "leaf up" && cls != "spine down" && cls != "spine up" && cls != "core down") continue;
    const double mean = c.value("bytes_per_link", 0.0), top = c["busiest_link"].value("bytes", 0.0);
    if (mean > 0 && top / mean > worst) {
      worst = top / mean;
      out = {{"class", cls}, {"ratio", top / mean}, {"link", c["busiest_link"].value("name", "")}};
    }
  }
  return out;
}

std::string pct0(double v) { return fmt("%.0f %%", v * 100); }

}  // namespace

Json explain_difference(const Json& r, const Json& b) {
  const double dstep = r["step_time_s"].get<double>() - b["step_time_s"].get<double>();
  const double dcomp = r["compute_only_s"].get<double>() - b["compute_only_s"].get<double>();
  const double dexp = r["exposed_comm_s"].get<double>() - b["exposed_comm_s"].get<double>();
  const Json& run = r.contains("run") ? r["run"] : r;
  std::string kind, text;
  if (does_not_fit(r)) {
    kind = "memory";
    text = "memory: " + memory_note(r);
  } else if (dcomp >= 0.5 * dstep) {
    kind = "compute";
    const std::string g = r.value("gpu", std::string("?")), bg = b.value("gpu", std::string("?"));
    text = "compute: " + core::format_time(r["compute_only_s"].get<double>()) + " of GPU work per step vs " +
           core::format_time(b["compute_only_s"].get<double>()) +
           (g == bg ? " (both " + g + ")" : " (" + g + " vs " + bg + ")");
    // The part of the step that differs most (an FSDP/HSDP or ZeRO optimizer sharded over fewer
    // GPUs, DDP's own work, a slower GPU's passes), when the run reports carry the parts.
    const Json& brun = b.contains("run") ? b["run"] : b;
    const std::pair<const char*, const char*> parts[] = {{"forward_s", "forward pass"},
                                                         {"backward_compute_s", "backward pass"},
                                                         {"optimizer_s", "optimizer step"},
                                                         {"ddp_overhead_s", "DDP's own work"}};
    const char* most = nullptr;
    double most_d = 0, mine = 0, theirs = 0;
    for (const auto& [key, name] : parts) {
      if (!run.contains(key) || !brun.contains(key) || !run[key].is_number() || !brun[key].is_number()) continue;
      const double d = run[key].get<double>() - brun[key].get<double>();
      if (d > most_d) {
        most_d = d;
        most = name;
        mine = run[key].get<double>();
        theirs = brun[key].get<double>();
      }
    }
    if (most && most_d > 0.5 * dcomp)
      text += "; mostly the " + std::string(most) + " (" + core::format_time(mine) + " vs " +
              core::format_time(theirs) + ")";
  } else if (dexp > 0) {
    const Json ecmp = ecmp_collision(run);
    const Json& busiest = run.contains("busiest_link") ? run["busiest_link"] : Json(nullptr);
    const double util = busiest.is_object() ? busiest.value("utilisation", 0.0) : 0.0;
    const std::string exposed = "exposed comm " + core::format_time(r["exposed_comm_s"].get<double>()) + " vs " +
                                core::format_time(b["exposed_comm_s"].get<double>());
    const Json& brun = b.contains("run") ? b["run"] : b;
    // FSDP: its collectives are per unit; which of them stays exposed is the mechanism.
    auto fsdp_exposed = [](const Json& x, const char* key) {
      double sum = 0;
      if (x.contains("fsdp_units") && x["fsdp_units"].is_array())
        for (const auto& u : x["fsdp_units"]) sum += u.value(key, 0.0);
      return sum;
    };
    const bool fsdp = run.value("fsdp", std::string()).size() && brun.value("fsdp", std::string()).size();
    const double ag = fsdp_exposed(run, "allgather_exposed_s"), bag = fsdp_exposed(brun, "allgather_exposed_s");
    const double rd = fsdp_exposed(run, "reduce_exposed_s"), brd = fsdp_exposed(brun, "reduce_exposed_s");
    // Named only when the units' exposed collectives grow; else the generic reasons below.
    if (fsdp && std::max(ag - bag, rd - brd) > 0) {
      kind = "fsdp";
      text = std::string(rd - brd >= ag - bag ? "FSDP gradient reductions" : "FSDP parameter all-gathers") +
             ": exposed all-gathers " + core::format_time(ag) + " vs " + core::format_time(bag) +
             ", exposed reductions (reduce-scatter, replica all-reduce) " + core::format_time(rd) + " vs " +
             core::format_time(brd) + "; " + exposed;
    } else if (!ecmp.is_null()) {
      kind = "ecmp-collisions";
      text = "ECMP collisions: the busiest " + ecmp["class"].get<std::string>() + " link (" +
             ecmp["link"].get<std::string>() + ") carries " + fmt("%.1fx", ecmp["ratio"].get<double>()) +
             " its class's mean while others idle; " + exposed;
    } else if (busiest.is_object() && util >= 0.3) {
      const std::string cls = busiest.value("class", std::string("?"));
      const Json& bom = r.contains("bom") ? r["bom"] : Json(nullptr);
      const double over_leaf = bom.is_object() ? bom.value("leaf_oversubscription", 1.0) : 1.0;
      const double over_spine = bom.is_object() ? bom.value("spine_oversubscription", 1.0) : 1.0;
      const bool leaf_up = cls == "leaf up" || cls == "spine down";
      const bool core = cls == "spine up" || cls == "core down";
      if ((leaf_up && over_leaf > 1) || (core && over_spine > 1)) {
        kind = "spine-oversubscription";
        text = "spine oversubscription: the " + cls + " links (" + fmt("%g:1", leaf_up ? over_leaf : over_spine) +
               " oversubscribed) are the bottleneck (busiest " + busiest.value("name", std::string("?")) + ", " +
               pct0(util) + " utilised); " + exposed;
      } else {
        kind = "bottleneck-link";
        text = "bandwidth: the bottleneck is the " + cls + " links (busiest " +
               busiest.value("name", std::string("?")) + ", " + pct0(util) + " utilised); " + exposed;
      }
    } else if (busiest.is_object()) {
      kind = "latency-bound";
      text = "latency-bound buckets: the links are at most " + pct0(util) + " utilised, so per-collective latency of " +
             std::to_string(r.value("num_buckets", 0)) + " buckets dominates; " + exposed;
    } else {
      kind = "communication";
      text = "communication: " + exposed + ", comm alone " + core::format_time(r.value("comm_alone_s", 0.0)) + " vs " +
             core::format_time(b.value("comm_alone_s", 0.0));
    }
  } else {
    kind = "other";
    text = "other waits: step " + core::format_time(r["step_time_s"].get<double>()) + " vs " +
           core::format_time(b["step_time_s"].get<double>()) + " with compute and exposed comm no larger";
  }
  return {{"kind", kind}, {"text", text}, {"step_time_delta_s", dstep}};
}

void attach_scattered(Json& row, const Json* report, const std::string& error) {
  if (!row.contains("placement") || !row["placement"].is_object()) return;
  if (!report) {
    row["placement"]["scattered"] = {{"error", error}};
    return;
  }
  Json s = Json::object();
  for (const char* k : {"step_time_s", "samples_per_s", "exposed_comm_s", "compute_only_s", "comm_alone_s", "fits",
                        "num_buckets", "gpu"})
    if (report->contains(k)) s[k] = (*report)[k];
  if (!s.contains("fits")) s["fits"] = nullptr;
  // What explain_difference reads of the run: its link classes and busiest link (and FSDP units).
  Json run = Json::object();
  for (const char* k : {"links", "busiest_link", "fsdp", "fsdp_units"})
    if (report->contains(k)) run[k] = (*report)[k];
  s["run"] = run;
  row["placement"]["scattered"] = s;
}

void placement_ranges(Json& rows, std::optional<double> tolerance) {
  for (auto& r : rows) {
    if (r.contains("error") || !r.contains("placement")) continue;
    Json& p = r["placement"];
    if (!p["scattered"].is_object() || !p["scattered"].contains("step_time_s")) continue;
    const double packed = r["step_time_s"].get<double>(), scattered = p["scattered"]["step_time_s"].get<double>();
    double tol = 0.01;
    std::string source = "default";
    if (tolerance) {
      tol = *tolerance;
      source = "--tolerance";
    } else if (r.contains("prediction") && r["prediction"].is_object() && has_num(r["prediction"], "resolution")) {
      tol = r["prediction"]["resolution"].get<double>();
      source = "prediction band";
    }
    const double rel = packed > 0 ? scattered / packed - 1 : 0.0;
    p["range_s"] = {std::min(packed, scattered), std::max(packed, scattered)};
    p["relative"] = rel;
    p["tolerance"] = tol;
    p["tolerance_source"] = source;
    p["matters"] = std::abs(rel) > tol;
    if (std::abs(rel) > tol) {
      p["scattered"]["bom"] = r["bom"];  // the fabric's oversubscription, for the mechanism
      Json e = explain_difference(p["scattered"], r);
      p["scattered"].erase("bom");
      p["why"] = e;
    }
  }
}

std::string tie_reason(const Json& rows, const std::vector<size_t>& tied) {
  bool identical = true, none_above = true, fabrics_differ = false;
  const Json& first = rows[tied[0]];
  for (size_t i : tied) {
    const Json& r = rows[i];
    if (std::abs(r["step_time_s"].get<double>() - first["step_time_s"].get<double>()) >
        1e-9 * first["step_time_s"].get<double>())
      identical = false;
    if (bytes_above_leaves(r.contains("run") ? r["run"] : r) > 0) none_above = false;
    if (r["bom"]["topology"] != first["bom"]["topology"] || r["bom"]["spines"] != first["bom"]["spines"] ||
        r["set"] != first["set"])
      fabrics_differ = true;
  }
  // Rows whose placement the provider does not guarantee and whose scattered run differs: the tie
  // holds only for the placement assumed.
  std::vector<std::string> unhidden;
  for (size_t i : tied) {
    const Json& r = rows[i];
    if (!r.contains("placement") || !r["placement"].value("matters", false)) continue;
    const Json& p = r["placement"];
    const std::string assumed = p["assumed"].is_string() ? p["assumed"].get<std::string>() : std::string("?");
    std::string t = r["label"].get<std::string>() + " (as placed: " + assumed + ") is " +
                    fmt("%+.1f %%", p["relative"].get<double>() * 100) + " scattered";
    if (p.contains("why")) t += " (" + p["why"]["text"].get<std::string>() + ")";
    unhidden.push_back(t);
  }
  std::string reason;
  if (identical && none_above && fabrics_differ)
    reason =
        "identical to the last digit: no step traffic crosses a leaf's uplinks (the job's ranks are packed under "
        "the same leaves), so oversubscribed spines and rail wiring are never used at this size; they differ only in "
        "the bill of materials";
  else if (identical)
    reason = "identical to the last digit: the options simulate the same step";
  else
    reason = "within the tolerance: the model cannot tell them apart";
  if (!unhidden.empty())
    reason += "; but only as placed: the provider does not guarantee the placement, and scattered over the fabric " +
              join(unhidden, "; ");
  return reason;
}

Json mark_best(Json& rows, std::optional<double> tolerance) {
  struct Crit {
    const char* name;
    Metric metric;
  };
  // Scaling efficiency is shown but not ranked: it favours the slowest GPU (least compute to
  // hide the communication behind), which tells a buyer nothing; what a buyer ranks is time
  // (fastest) and money per unit of work (cheapest).
  const Crit crits[] = {{"fastest", Metric::SAMPLES_PER_S}, {"cheapest", Metric::COST}};
  Json best = Json::object();
  Json ties = Json::object();
  for (auto& r : rows)
    if (!r.contains("error")) r["best"] = Json::array();
  for (const auto& c : crits) {
    DecideOptions o;
    o.metric = c.metric;
    o.tolerance = tolerance;
    const auto ds = decide(
        rows, o, [](const Json&) { return Json::object(); },
        [&](const Json& r) {
          if (r.contains("error")) return false;
          if (does_not_fit(r)) return false;
          return has_num(r, metric_key(c.metric));
        });
    if (ds.empty()) {
      best[c.name] = nullptr;
      continue;
    }
    const auto& d = ds[0];
    best[c.name] = *d.best;
    if (d.is_flat()) {
      Json t = Json::array();
      for (size_t i : d.flat) {
        t.push_back(i);
        rows[i]["best"].push_back(std::string(c.name) + " (tie)");
      }
      ties[c.name] = {{"rows", t},
                      {"tolerance", d.tolerance},
                      {"tolerance_source", d.tolerance_source},
                      {"reason", tie_reason(rows, d.flat)}};
    } else {
      rows[*d.best]["best"].push_back(c.name);
    }
  }
  best["ties"] = ties;
  return best;
}

Json why_block(const Json& rows, std::optional<double> tolerance) {
  Json out = Json::array();
  std::vector<long long> node_counts;
  for (const auto& r : rows)
    if (!r.contains("error") &&
        std::find(node_counts.begin(), node_counts.end(), r["nodes"].get<long long>()) == node_counts.end())
      node_counts.push_back(r["nodes"].get<long long>());
  for (long long n : node_counts) {
    std::optional<size_t> fast;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      if (r.contains("error") || r["nodes"].get<long long>() != n) continue;
      if (does_not_fit(r)) continue;
      if (!fast || r["samples_per_s"].get<double>() > rows[*fast]["samples_per_s"].get<double>() * (1 + 1e-9)) fast = i;
    }
    if (!fast) continue;
    const Json& b = rows[*fast];
    const double tol = tolerance.value_or(0.01);
    Json others = Json::array();
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      if (i == *fast || r.contains("error") || r["nodes"].get<long long>() != n) continue;
      const double rel = r["step_time_s"].get<double>() / b["step_time_s"].get<double>() - 1;
      Json e;
      const bool fits = !does_not_fit(r);
      if (fits && std::abs(rel) <= tol) {
        e = {{"kind", "tie"},
             {"text", "ties with it (step " + fmt("%+.2f %%", rel * 100) + "): " + tie_reason(rows, {*fast, i})}};
      } else {
        e = explain_difference(r, b);
        e["text"] = fmt("+%.1f %% step time; ", rel * 100) + e["text"].get<std::string>();
      }
      // Placed as assumed; scattered (placement not guaranteed) it would differ more: say by what.
      if (r.contains("placement") && r["placement"].value("matters", false)) {
        const Json& p = r["placement"];
        e["text"] = e["text"].get<std::string>() + "; scattered over the fabric " +
                    fmt("%+.1f %%", p["relative"].get<double>() * 100) + " more" +
                    (p.contains("why") ? " (" + p["why"]["kind"].get<std::string>() + ")" : std::string());
      }
      e["row"] = i;
      e["label"] = r["label"];
      others.push_back(std::move(e));
    }
    if (!others.empty()) out.push_back({{"nodes", n}, {"fastest", *fast}, {"others", others}});
  }
  return out;
}

Outputs render(const std::string& scenario, const std::vector<ClusterOption>& options,
               const std::vector<std::string>& global_overrides, const Target& target, Json rows, const Json& baselines,
               std::optional<double> tolerance) {
  Outputs out;
  placement_ranges(rows, tolerance);
  const Json best = mark_best(rows, tolerance);
  const Json why = why_block(rows, tolerance);
  bool any_seq = false, any_capex = false;
  size_t failed = 0;
  for (const auto& r : rows) {
    if (r.contains("error")) {
      ++failed;
      continue;
    }
    if (!r["tokens_per_s"].is_null()) any_seq = true;
    if (!r["bom"]["capex"].is_null()) any_capex = true;
  }
  const std::string unit = target.kind == Target::TOKENS ? " tokens" : " samples";

  // ---- main table
  std::vector<std::string> head = {"option", "nodes", "GPUs", "step time", "samples/s"};
  if (any_seq) head.push_back("tokens/s");
  for (const char* h : {"scaling", "overlap", "exposed comm", "mem/GPU", "fits", "$/h", "$/M samples"})
    head.push_back(h);
  if (target.kind != Target::NONE) {
    head.push_back("time to " + amount_text(target.amount) + unit);
    head.push_back("cost");
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> tails;
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;  // does not fit: figures -> runs
  auto opt_text = [](const Json& v, const std::function<std::string(double)>& f) {
    return v.is_number() ? f(v.get<double>()) : std::string("-");
  };
  for (const auto& r : rows) {
    std::vector<std::string> c{r["option"].get<std::string>()};
    if (r.contains("error")) {
      c.push_back(r["nodes"].is_null() ? "-" : std::to_string(r["nodes"].get<long long>()));
      while (c.size() < head.size()) c.push_back("-");
      std::string msg = r["error"].get<std::string>();
      if (auto nl = msg.find('\n'); nl != std::string::npos) msg = msg.substr(0, nl) + " ...";
      tails.push_back("   FAILED (exit " + std::to_string(r.value("exit_code", 1)) + "): " + msg);
      cells.push_back(std::move(c));
      continue;
    }
    c.push_back(std::to_string(r["nodes"].get<long long>()));
    c.push_back(std::to_string(r["world_size"].get<long long>()));
    {
      // The packed-to-scattered range where the provider does not guarantee placement and it matters.
      std::string st = core::format_time(num(r, "step_time_s"));
      const Json& pl = r.contains("placement") ? r["placement"] : Json(nullptr);
      if (pl.is_object() && pl.value("matters", false))
        st += ".." + core::format_time(pl["scattered"]["step_time_s"].get<double>());
      c.push_back(st);
    }
    c.push_back(rate(num(r, "samples_per_s")));
    if (any_seq) c.push_back(opt_text(r["tokens_per_s"], rate));
    {
      std::string sc = opt_text(r["scaling_efficiency"], core::percent1_text);
      if (r["scaling_efficiency"].is_number() && r.value("baseline_fits", Json()) == Json(false)) sc += "*";
      c.push_back(sc);
    }
    c.push_back(opt_text(r.value("overlap_ratio", Json()), core::percent1_text));
    c.push_back(core::format_time(num(r, "exposed_comm_s")));
    c.push_back(opt_text(r["memory_per_gpu_bytes"], gib));
    c.push_back(r["fits"].is_boolean() ? (r["fits"].get<bool>() ? "yes" : "NO") : "-");
    c.push_back(opt_text(r["price_per_hour"], [](double v) { return fmt("%.2f", v); }));
    c.push_back(opt_text(r["cost_per_million_samples"], [](double v) { return fmt("%.2f", v); }));
    if (target.kind != Target::NONE) {
      c.push_back(opt_text(r["train_time_s"], long_duration));
      c.push_back(opt_text(r["train_cost"], money));
    }
    std::vector<std::string> marks;
    for (const auto& m : r["best"]) marks.push_back(m.get<std::string>());
    std::string tail = marks.empty() ? "" : "   <- " + join(marks, ", ");
    if (does_not_fit(r)) {
      tail += "   (does not fit: excluded from best)";
      // One line per figure pair, naming every run that has it (a purchase grid repeats them).
      const std::string what = memory_note(r);
      auto same = std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == what; });
      if (same == notes.end())
        notes.push_back({what, {r["label"].get<std::string>()}});
      else
        same->second.push_back(r["label"].get<std::string>());
    }
    tails.push_back(tail);
    cells.push_back(std::move(c));
  }
  std::ostringstream o;
  o << "compare of " << scenario << " (" << options.size() << " option" << (options.size() == 1 ? "" : "s") << ", "
    << rows.size() << " runs";
  size_t scattered_runs = 0;  // the extra runs of options whose placement is not guaranteed
  for (const auto& r : rows)
    if (r.contains("placement") && r["placement"].is_object() && r["placement"].contains("scattered") &&
        r["placement"]["scattered"].is_object())
      ++scattered_runs;
  if (scattered_runs) o << " + " << scattered_runs << " scattered";
  if (failed) o << ", " << failed << " failed";
  o << ")\n";
  o << aligned(head, cells, tails);

  // ---- bill of materials
  std::vector<std::string> bh = {"option", "nodes", "topology", "servers", "NICs",        "leaves",
                                 "spines", "cores", "switches", "cables",  "switch ports"};
  if (any_capex) bh.push_back("capex");
  std::vector<std::vector<std::string>> bcells;
  for (const auto& r : rows) {
    if (r.contains("error")) continue;
    const auto& b = r["bom"];
    const std::string topo = b["topology"].get<std::string>();
    const bool ideal = topo == "single_switch";
    const bool none = topo == "none";
    std::vector<std::string> c{r["option"].get<std::string>(), std::to_string(r["nodes"].get<long long>()),
                               ideal ? "single_switch (ideal)" : topo};
    c.push_back(std::to_string(b["servers"].get<long long>()));
    c.push_back(none ? "-" : std::to_string(b["nics"].get<long long>()));
    for (const char* k : {"leaves", "spines", "cores", "switches"})
      c.push_back(ideal || none ? "-" : std::to_string(b[k].get<long long>()));
    c.push_back(none ? "-" : std::to_string(b["cables"].get<long long>()));
    c.push_back(ideal || none ? "-" : std::to_string(b["switch_ports_used"].get<long long>()));
    if (any_capex) c.push_back(b["capex"].is_number() ? fmt("$%.0f", b["capex"].get<double>()) : "-");
    bcells.push_back(std::move(c));
  }
  if (!bcells.empty()) {
    o << "\nfabric bill of materials (servers wired: the job's nodes rounded up to whole leaves or units)\n";
    o << aligned(bh, bcells, {});
  }

  // ---- notes
  o << "\nscaling = samples/s per GPU / samples/s of the same option on 1 GPU (nodes=1, gpus_per_node=1)";
  std::vector<std::string> base_text, unfit_base;
  for (size_t i = 0; i < options.size() && i < baselines.size(); ++i) {
    const auto& b = baselines[i];
    base_text.push_back(options[i].label + " " +
                        (b.contains("error") ? std::string("FAILED") : rate(num(b, "samples_per_s")) + "/s"));
    if (!b.contains("error") && b.value("fits", Json()) == Json(false))
      unfit_base.push_back(options[i].label + " (" + gib_of(b, "memory_per_gpu_bytes") + " of " +
                           gib_of(b, "gpu_memory_bytes") + ")");
  }
  if (!base_text.empty()) o << ":\n  " << join(base_text, "; ");
  o << "\n";
  if (!unfit_base.empty())
    o << "* the 1-GPU baseline does not fit one GPU's memory: " << join(unfit_base, ", ")
      << "; its scaling is against a GPU that could hold the whole job, not a run anyone can make\n";
  std::vector<std::string> unpriced;
  for (size_t i = 0; i < options.size(); ++i) {
    bool has = false, any = false;
    for (const auto& r : rows)
      if (!r.contains("error") && r["option"] == options[i].label) {
        any = true;
        has = has || !r["price_per_hour"].is_null();
      }
    if (any && !has) unpriced.push_back(options[i].label);
  }
  if (!unpriced.empty())
    o << "$/h: no price in the cluster file of " << join(unpriced, ", ")
      << " (add price_per_gpu_hour for a rented cluster or an ownership block for an owned one)\n";
  for (const auto& opt : options)
    for (const auto& r : rows)
      if (!r.contains("error") && r["option"] == opt.label && r["ownership"].is_object()) {
        const auto& w = r["ownership"];
        o << "$/h of " << r["label"].get<std::string>() << ": owned: " << w["servers"].get<long long>()
          << (w["servers"].get<long long>() == 1 ? " server x " : " servers x ")
          << money(w["server_price"].get<double>()) << " + fabric "
          << (w["fabric_capex"].is_number() ? money(w["fabric_capex"].get<double>()) : std::string("not priced"))
          << " over " << fmt("%g", w["years"].get<double>()) << " years at " << pct0(w["utilisation"].get<double>())
          << " use = " << fmt("$%.2f/h", w["capex_per_hour"].get<double>()) << ", power "
          << fmt("$%.2f/h", w["power_per_hour"].get<double>()) << " -> "
          << fmt("$%.3f per GPU-hour", w["price_per_gpu_hour"].get<double>()) << "\n";
      }
  o << "$/M samples = $/h x step time / 3600 / samples per step x 1e6; '-' = unknown; best excludes failed runs "
       "and runs that do not fit\n";
  o << "scaling is shown, not ranked: the slowest GPU scales best (it has the most compute to hide the "
       "communication behind); rank by fastest (time to train) or cheapest ($ per unit of work)\n";
  for (const auto& [what, runs] : notes) o << join(runs, ", ") << ": " << what << "\n";
  // ---- placement: what each row assumed, and the scattered bound where the provider does not guarantee it
  {
    std::vector<std::string> lines;
    for (const auto& r : rows) {
      if (r.contains("error") || !r.contains("placement") || r["placement"]["assumed"].is_null()) continue;
      const Json& p = r["placement"];
      const std::string label = r["label"].get<std::string>();
      const std::string assumed = p["assumed"].get<std::string>();
      if (p["guaranteed"].get<bool>()) {
        lines.push_back(label + ": " + assumed + " (the cluster file's placement)");
        continue;
      }
      std::string t = label + ": assumes " + assumed + "; the provider does not guarantee placement";
      if (p["scattered"].is_object() && p["scattered"].contains("error")) {
        t += "; the scattered run failed: " + p["scattered"]["error"].get<std::string>();
      } else if (p.contains("range_s")) {
        const double rel = p["relative"].get<double>(), tol = p["tolerance"].get<double>();
        t += "; scattered (no two nodes under one leaf domain): step " + core::format_time(num(r, "step_time_s")) +
             " -> " + core::format_time(p["scattered"]["step_time_s"].get<double>()) + " (" +
             fmt("%+.1f %%", rel * 100);
        if (p["matters"].get<bool>())
          t += ", beyond the " + percent_text(tol) +
               " tie threshold): " + (p.contains("why") ? p["why"]["text"].get<std::string>() : std::string("?"));
        else
          t += ", within the " + percent_text(tol) + " tie threshold: placement does not matter here)";
      } else if (p.contains("note")) {
        t += "; " + p["note"].get<std::string>();
      } else {
        t += "; one node: no inter-node traffic";
      }
      lines.push_back(t);
    }
    bool any_unguaranteed = false;
    for (const auto& r : rows)
      if (!r.contains("error") && r.contains("placement") && !r["placement"]["guaranteed"].get<bool>())
        any_unguaranteed = true;
    if (any_unguaranteed && !lines.empty()) {
      o << "\nplacement (each row's figures are for the placement it assumed; '..' in step time: packed..scattered):\n";
      for (const auto& l : lines) o << "  " << l << "\n";
    }
  }
  // ---- collectives: rows whose collective model leaves its validated tables by a wide margin
  // (report/prediction.cpp collectives_part: held-out tables measured at least this far off there)
  {
    constexpr double kWide = 0.2;
    std::vector<std::string> lines;
    for (const auto& r : rows) {
      if (r.contains("error") || !r.contains("prediction") || !r["prediction"].is_object()) continue;
      const Json& pr = r["prediction"];
      if (!pr.contains("parts") || !pr.contains("band_s")) continue;
      for (const auto& part : pr["parts"]) {
        if (part.value("part", "") != "collectives" || part.value("kind", "").find("extrapolated") == std::string::npos)
          continue;  // "extrapolated", "extrapolated (plain ring)", "calibrated, extrapolated"
        const double high = part["relative_error_range"][1].get<double>();
        if (high < kWide) continue;
        const double busy = part.contains("reach_s") ? part["reach_s"][1].get<double>() : 0.0;
        lines.push_back(r["label"].get<std::string>() + ": step " + core::format_time(num(r, "step_time_s")) +
                        ", likely " + report::band_text(pr["band_s"][0].get<double>(), pr["band_s"][1].get<double>()) +
                        "; its " + core::format_time(busy) + " of communication could take up to " +
                        fmt("%.0f %%", 100 * high) + " longer\n      " + part.value("validation", ""));
      }
    }
    if (!lines.empty()) {
      o << "\ncollectives beyond the validated tables (each row's likely band, docs/accuracy.md \"The prediction "
           "band\"):\n";
      for (const auto& l : lines) o << "  " << l << "\n";
    }
  }
  for (const auto& [crit, t] : best["ties"].items()) {
    std::vector<std::string> names;
    for (const auto& i : t["rows"]) names.push_back(rows[i.get<size_t>()]["label"].get<std::string>());
    o << crit << ": a tie, any of " << join(names, ", ") << " within " << percent_text(t["tolerance"].get<double>())
      << ": " << t["reason"].get<std::string>() << "\n";
  }
  if (!why.empty()) {
    o << "\nwhy (each option against the fastest at the same node count):\n";
    for (const auto& g : why) {
      o << "  " << g["nodes"].get<long long>() << " node" << (g["nodes"].get<long long>() == 1 ? "" : "s")
        << ": fastest " << rows[g["fastest"].get<size_t>()]["label"].get<std::string>() << "\n";
      for (const auto& e : g["others"])
        o << "    " << e["label"].get<std::string>() << ": " << e["text"].get<std::string>() << "\n";
    }
  }
  out.table = o.str();

  // ---- CSV
  std::ostringstream csv;
  const char* cols[] = {"label",
                        "option",
                        "cluster",
                        "set",
                        "nodes",
                        "world_size",
                        "step_time_s",
                        "samples_per_s",
                        "tokens_per_s",
                        "samples_per_step",
                        "scaling_efficiency",
                        "baseline_fits",
                        "overlap_ratio",
                        "exposed_comm_s",
                        "memory_per_gpu_bytes",
                        "gpu_memory_bytes",
                        "fits",
                        "price_per_hour",
                        "cost_per_million_samples",
                        "train_time_s",
                        "train_cost"};
  const char* bom_cols[] = {"topology", "servers",           "nics", "leaves", "spines", "cores", "switches",
                            "cables",   "switch_ports_used", "capex"};
  {
    std::vector<std::string> h(std::begin(cols), std::end(cols));
    for (const char* k : bom_cols) h.push_back(std::string("bom_") + k);
    for (const char* k : {"placement_assumed", "placement_guaranteed", "scattered_step_time_s", "placement_matters"})
      h.push_back(k);
    h.push_back("best");
    h.push_back("error");
    h.push_back("exit_code");
    csv << join(h, ",") << "\n";
  }
  for (const auto& r : rows) {
    std::vector<std::string> f;
    for (const char* k : cols) {
      if (std::string(k) == "set") {
        std::vector<std::string> s;
        for (const auto& v : r["set"]) s.push_back(v.get<std::string>());
        f.push_back(report::csv_escape(join(s, ",")));
      } else {
        f.push_back(r.contains(k) ? report::csv_value(r[k]) : "");
      }
    }
    for (const char* k : bom_cols) f.push_back(r.contains("bom") ? report::csv_value(r["bom"][k]) : "");
    {
      const Json pl = r.contains("placement") ? r["placement"] : Json(nullptr);
      const bool sc = pl.is_object() && pl["scattered"].is_object() && pl["scattered"].contains("step_time_s");
      f.push_back(pl.is_object() ? report::csv_value(pl["assumed"]) : "");
      f.push_back(pl.is_object() ? report::csv_value(pl["guaranteed"]) : "");
      f.push_back(sc ? report::csv_value(pl["scattered"]["step_time_s"]) : "");
      f.push_back(pl.is_object() && pl.contains("matters") ? report::csv_value(pl["matters"]) : "");
    }
    std::vector<std::string> marks;
    if (r.contains("best"))
      for (const auto& m : r["best"]) marks.push_back(m.get<std::string>());
    f.push_back(report::csv_escape(join(marks, ";")));
    f.push_back(r.contains("error") ? report::csv_escape(r["error"].get<std::string>()) : "");
    f.push_back(r.contains("exit_code") ? report::csv_value(r["exit_code"]) : "");
    csv << join(f, ",") << "\n";
  }
  out.csv = csv.str();

  // ---- JSON
  Json opts = Json::array();
  for (size_t i = 0; i < options.size(); ++i) {
    Json b = i < baselines.size() ? baselines[i] : Json(nullptr);
    Json base = nullptr;
    if (b.is_object() && b.contains("error"))
      base = {{"error", b["error"]}};
    else if (b.is_object())
      base = {{"step_time_s", b["step_time_s"]},
              {"samples_per_s", b["samples_per_s"]},
              {"fits", b.value("fits", Json(nullptr))},
              {"memory_per_gpu_bytes", b.value("memory_per_gpu_bytes", Json(nullptr))},
              {"gpu_memory_bytes", b.value("gpu_memory_bytes", Json(nullptr))}};
    opts.push_back({{"label", options[i].label},
                    {"text", options[i].text},
                    {"cluster", options[i].cluster},
                    {"set", options[i].overrides},
                    {"baseline_1gpu", base}});
  }
  Json tgt = nullptr;
  if (target.kind != Target::NONE) tgt = {{target.kind == Target::SAMPLES ? "samples" : "tokens", target.amount}};
  out.json = {
      {"ddpsim_compare", 1},
      {"scenario", scenario},
      {"set", global_overrides},
      {"options", opts},
      {"target", tgt},
      {"definitions",
       {{"scaling_efficiency", "(samples_per_s / world_size) / samples_per_s of the same option on 1 node with 1 GPU"},
        {"price_per_hour", "price_per_gpu_hour x world_size (USD)"},
        {"cost_per_million_samples", "price_per_hour x step_time_s / 3600 / samples_per_step x 1e6"},
        {"train_time_s", "N / samples_per_s (--samples) or N / tokens_per_s (--tokens)"},
        {"train_cost", "price_per_hour x train_time_s / 3600"},
        {"best",
         "fastest (most samples/s) and cheapest (least cost_per_million_samples) among rows that ran and whose fits "
         "is not false; rows within the tolerance (1 % unless given or a prediction band) tie: best.ties"},
        {"scaling_efficiency_ranked", "no: the slowest GPU scales best, so it is shown, never ranked"}}},
      {"rows", rows},
      {"best", best},
      {"why", why},
      {"failed", failed}};
  return out;
}

}  // namespace ddpsim::compare
