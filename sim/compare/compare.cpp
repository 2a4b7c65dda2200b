#include "compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "config/fabric_spec.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "report/csv.hpp"

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

std::string pct1(double v) {
  double p = v * 100.0;
  if (std::abs(p) < 0.05) p = 0.0;
  return fmt("%.1f%%", p);
}

std::string rate(double v) { return v >= 1000 ? fmt("%.0f", v) : v >= 10 ? fmt("%.1f", v) : fmt("%.3f", v); }

std::string gib(double bytes) { return fmt("%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

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

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// Columns right-aligned, each as wide as its widest cell, two spaces apart.
std::string aligned(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells,
                    const std::vector<std::string>& tails) {
  std::vector<size_t> width(head.size());
  for (size_t k = 0; k < head.size(); ++k) {
    width[k] = head[k].size();
    for (const auto& c : cells) width[k] = std::max(width[k], c[k].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string l;
    for (size_t k = 0; k < c.size(); ++k) {
      // The first column (the option) left-aligned, the figures right-aligned.
      const std::string pad(width[k] - c[k].size(), ' ');
      l += std::string(k ? 2 : 0, ' ') + (k == 0 ? c[k] + pad : pad + c[k]);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l;
  };
  std::string o = line(head) + "\n";
  for (size_t i = 0; i < cells.size(); ++i) o += line(cells[i]) + (i < tails.size() ? tails[i] : "") + "\n";
  return o;
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
  } else {
    f.bom.servers = c.nodes;
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
  const int world = static_cast<int>(num(report, "world_size"));
  const int nodes = static_cast<int>(num(report, "nodes"));
  row["label"] = option.label + " x" + std::to_string(nodes);
  row["option"] = option.label;
  row["cluster"] = option.cluster;
  row["set"] = option.overrides;
  // The report's fields the outputs and scripts/ddpsim-plot use, as the run wrote them.
  for (const char* k :
       {"scenario", "model", "gpu", "nodes", "gpus_per_node", "world_size", "step_time_s", "samples_per_s",
        "samples_per_rank", "seq_len", "overlap_ratio", "exposed_comm_s", "compute_only_s", "contention_s",
        "comm_exposed_s", "comm_alone_s", "num_buckets", "mfu", "backend"})
    if (report.contains(k)) row[k] = report[k];
  // Memory fit, when the run report has it (absent: unknown).
  for (const char* k : {"memory_per_gpu_bytes", "gpu_memory_bytes", "fits", "memory"})
    row[k] = report.contains(k) ? report[k] : Json(nullptr);
  const double sps = num(report, "samples_per_s");
  const double step = num(report, "step_time_s");
  const double samples_per_step = num(report, "samples_per_rank") * world;
  row["samples_per_step"] = samples_per_step;
  row["samples_per_s_per_gpu"] = world > 0 ? sps / world : 0.0;
  const bool seq = has_num(report, "seq_len") && num(report, "seq_len") > 0;
  const double seq_len = seq ? num(report, "seq_len") : 0.0;
  row["tokens_per_s"] = seq ? Json(sps * seq_len) : Json(nullptr);
  if (baseline && has_num(*baseline, "samples_per_s") && num(*baseline, "samples_per_s") > 0 && world > 0) {
    row["baseline_samples_per_s"] = num(*baseline, "samples_per_s");
    row["scaling_efficiency"] = scaling_efficiency(sps, world, num(*baseline, "samples_per_s"),
                                                   std::max(1, static_cast<int>(num(*baseline, "world_size"))));
  } else {
    row["baseline_samples_per_s"] = nullptr;
    row["scaling_efficiency"] = nullptr;
  }
  const bool priced = facts.price_per_gpu_hour > 0;
  const double per_hour = facts.price_per_gpu_hour * world;
  row["price_per_gpu_hour"] = priced ? Json(facts.price_per_gpu_hour) : Json(nullptr);
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
                {"capex", facts.capex_priced ? Json(b.capex) : Json(nullptr)}};
  row["run"] = report;
  return row;
}

Json mark_best(Json& rows) {
  struct Crit {
    const char* name;
    const char* key;
    bool larger;
  };
  const Crit crits[] = {{"fastest", "samples_per_s", true},
                        {"cheapest", "cost_per_million_samples", false},
                        {"best scaling", "scaling_efficiency", true}};
  Json best = Json::object();
  for (auto& r : rows)
    if (!r.contains("error")) r["best"] = Json::array();
  for (const auto& c : crits) {
    std::optional<size_t> pick;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      if (r.contains("error")) continue;
      if (r.contains("fits") && r["fits"].is_boolean() && !r["fits"].get<bool>()) continue;
      if (!has_num(r, c.key)) continue;
      // Figures equal to 1e-9 (relative) are a tie, which the first row wins: a 1:1 fat-tree and
      // the ideal switch differ only in the last digits of the flow solver.
      const double v = r[c.key].get<double>();
      const double p = pick ? rows[*pick][c.key].get<double>() : 0.0;
      const double tol = 1e-9 * std::max(std::abs(v), std::abs(p));
      if (!pick || (c.larger ? v > p + tol : v < p - tol)) pick = i;
    }
    best[c.name] = pick ? Json(*pick) : Json(nullptr);
    if (pick) rows[*pick]["best"].push_back(c.name);
  }
  return best;
}

Outputs render(const std::string& scenario, const std::vector<ClusterOption>& options,
               const std::vector<std::string>& global_overrides, const Target& target, Json rows,
               const Json& baselines) {
  Outputs out;
  const Json best = mark_best(rows);
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
  std::vector<std::string> notes;
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
    c.push_back(core::format_time(num(r, "step_time_s")));
    c.push_back(rate(num(r, "samples_per_s")));
    if (any_seq) c.push_back(opt_text(r["tokens_per_s"], rate));
    c.push_back(opt_text(r["scaling_efficiency"], pct1));
    c.push_back(opt_text(r.value("overlap_ratio", Json()), pct1));
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
    if (r["fits"].is_boolean() && !r["fits"].get<bool>()) {
      tail += "   (does not fit: excluded from best)";
      std::string need = r["memory_per_gpu_bytes"].is_number() ? gib(num(r, "memory_per_gpu_bytes")) : "?";
      std::string have = r["gpu_memory_bytes"].is_number() ? gib(num(r, "gpu_memory_bytes")) : "?";
      notes.push_back(r["label"].get<std::string>() + ": needs " + need + " per GPU, the GPU has " + have);
    }
    tails.push_back(tail);
    cells.push_back(std::move(c));
  }
  std::ostringstream o;
  o << "compare of " << scenario << " (" << options.size() << " option" << (options.size() == 1 ? "" : "s") << ", "
    << rows.size() << " runs";
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
  std::vector<std::string> base_text;
  for (size_t i = 0; i < options.size() && i < baselines.size(); ++i) {
    const auto& b = baselines[i];
    base_text.push_back(options[i].label + " " +
                        (b.contains("error") ? std::string("FAILED") : rate(num(b, "samples_per_s")) + "/s"));
  }
  if (!base_text.empty()) o << ":\n  " << join(base_text, "; ");
  o << "\n";
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
    o << "$/h: no price_per_gpu_hour in the cluster file of " << join(unpriced, ", ")
      << " (add one to the cluster file)\n";
  o << "$/M samples = $/h x step time / 3600 / samples per step x 1e6; '-' = unknown; best excludes failed runs "
       "and runs that do not fit\n";
  for (const auto& n : notes) o << n << "\n";
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
      base = {{"step_time_s", b.value("step_time_s", 0.0)}, {"samples_per_s", b.value("samples_per_s", 0.0)}};
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
        {"best", "among rows that ran and whose fits is not false; ties (equal to 1e-9) go to the first row"}}},
      {"rows", rows},
      {"best", best},
      {"failed", failed}};
  return out;
}

}  // namespace ddpsim::compare
