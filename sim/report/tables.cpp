#include "report/tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/text.hpp"
#include "core/units.hpp"

namespace ddpsim::report {

namespace {

double num(const core::Json& r, const char* k, double def = 0) {
  return r.contains(k) && r[k].is_number() ? r[k].get<double>() : def;
}

std::string params_label(const core::Json& r, const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) {
    if (!out.empty()) out += ", ";
    out += p + "=" + param_text(r["params"].value(p, core::Json()));
  }
  return out;
}

}  // namespace

bool is_fsdp_row(const core::Json& r) {
  return r.contains("fsdp") && r["fsdp"].is_string() && !r["fsdp"].get<std::string>().empty();
}

core::Json sweep_recommendation(const std::vector<std::string>& param_paths, const core::Json& rows,
                                std::optional<size_t> best) {
  core::Json rec = core::Json::object();
  if (!best) return rec;
  const auto& b = rows[*best];
  rec["best_point"] = b["point"];
  rec["best_params"] = b["params"];
  const double b_exp = num(b, "exposed_comm_s");
  const long long b_nb = b["num_buckets"].get<long long>();
  core::Json losers = core::Json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (i == *best || r.contains("error")) continue;
    const double exp = num(r, "exposed_comm_s");
    const long long nb = r["num_buckets"].get<long long>();
    const double dstep = num(r, "step_time_s") - num(b, "step_time_s");
    std::string kind, text = params_label(r, param_paths) + ": +" + core::format_time(dstep) + "; ";
    if (r.contains("data_parallel") && r["data_parallel"].is_object()) {
      // torch.nn.DataParallel (plan/dp_builder): no buckets; its phases say where time goes.
      kind = "data-parallel";
      const auto& ph = r["data_parallel"]["phases"];
      text += "torch.nn.DataParallel: scatter " + core::format_time(num(ph, "scatter_s")) + ", replicate " +
              core::format_time(num(ph, "replicate_s")) + ", forward " + core::format_time(num(ph, "forward_s")) +
              " (GIL waits " + core::format_time(num(r["data_parallel"], "gil_wait_s")) + " summed), gather " +
              core::format_time(num(ph, "gather_s")) + ", backward " + core::format_time(num(ph, "backward_s")) +
              ", reduce to GPU 0 " + core::format_time(num(ph, "reduce_s")) + ", optimizer " +
              core::format_time(num(ph, "optimizer_s"));
    } else if (num(r, "data_wait_s") > num(b, "data_wait_s") + 0.5 * (exp - b_exp) && exp > b_exp) {
      kind = "data-loader-bound";
      text += "data-loader-bound: waits " + core::format_time(num(r, "data_wait_s")) + " for input per step vs " +
              core::format_time(num(b, "data_wait_s"));
    } else if (const double dcomp = num(r, "compute_only_s") - num(b, "compute_only_s");
               dcomp > 0 && dcomp > exp - b_exp) {
      // More of the gap is compute than exposed communication (a dtype, memory format, model or
      // GPU swept, not the buckets).
      kind = "compute";
      text += "compute only " + core::format_time(num(r, "compute_only_s")) + " vs " +
              core::format_time(num(b, "compute_only_s")) + " (+" + core::format_time(dcomp) + "), exposed comm " +
              core::format_time(exp) + " vs " + core::format_time(b_exp);
    } else if (nb > b_nb && exp > b_exp) {
      kind = "latency-bound";
      text += "latency-bound: " + std::to_string(nb) + " all-reduces instead of " + std::to_string(b_nb) +
              " (comm alone " + core::format_time(num(r, "comm_alone_s")) + " vs " +
              core::format_time(num(b, "comm_alone_s")) + "), exposed comm " + core::format_time(exp) + " vs " +
              core::format_time(b_exp);
    } else if (nb < b_nb && exp > b_exp) {
      kind = "overlap-bound";
      const double launch = num(r, "last_bucket_launch_s"), ready = num(r, "last_gradient_ready_s");
      text +=
          "overlap-bound: " + std::to_string(nb) + " bucket(s); the last (" +
          core::format_bytes(num(r, "last_bucket_bytes")) + ", " + core::format_time(num(r, "last_bucket_alone_s")) +
          " alone) launches at " + core::format_time(launch) +
          (launch >= ready - 1e-9 ? ", when the last gradient is ready: nothing is left to hide it"
                                  : ", " + core::format_time(ready - launch) + " before the last gradient is ready") +
          "; " + core::format_time(num(r, "last_bucket_exposed_s")) + " of it exposed, exposed comm " +
          core::format_time(exp) + " vs " + core::format_time(b_exp);
    } else if (exp > b_exp && is_fsdp_row(r)) {
      kind = "comm";
      text += "exposed comm " + core::format_time(exp) + " vs " + core::format_time(b_exp) + " (all-gather waits " +
              core::format_time(num(r, "allgather_wait_s")) + " vs " + core::format_time(num(b, "allgather_wait_s")) +
              ", compute slowed by NCCL kernels " + core::format_time(num(r, "contention_s")) + " vs " +
              core::format_time(num(b, "contention_s")) + "), comm alone " + core::format_time(num(r, "comm_alone_s")) +
              " vs " + core::format_time(num(b, "comm_alone_s"));
    } else if (exp > b_exp) {
      kind = "comm";
      text += "exposed comm " + core::format_time(exp) + " vs " + core::format_time(b_exp) + " with " +
              std::to_string(nb) + " buckets, comm alone " + core::format_time(num(r, "comm_alone_s")) + " vs " +
              core::format_time(num(b, "comm_alone_s"));
    } else {
      kind = "compute";
      text += "compute only " + core::format_time(num(r, "compute_only_s")) + " vs " +
              core::format_time(num(b, "compute_only_s")) + " (exposed comm " + core::format_time(exp) + " vs " +
              core::format_time(b_exp) + ")";
    }
    losers.push_back({{"point", r["point"]}, {"kind", kind}, {"text", text}});
  }
  rec["losers"] = losers;
  const double alone = num(b, "comm_alone_s"), bwd = num(b, "backward_compute_s");
  std::string regime, rt;
  if (b["overlap_ratio"].is_null()) {
    regime = "no-communication";
    rt = "no communication (one GPU)";
  } else if (alone > bwd) {
    regime = "bandwidth-bound";
    rt = "bandwidth-bound: its communication alone (" + core::format_time(alone) + ") outlasts the backward (" +
         core::format_time(bwd) + "), so nothing can hide all of it; " + core::format_time(b_exp) + " stays exposed";
  } else if (b["overlap_ratio"].get<double>() >= 0.9) {
    regime = "hidden";
    rt = "communication hidden: overlap " + core::percent1_text(b["overlap_ratio"].get<double>()) + ", exposed comm " +
         core::format_time(b_exp);
  } else if (is_fsdp_row(b)) {
    regime = "balanced";
    rt = "FSDP units overlap their collectives with compute: exposed comm " + core::format_time(b_exp) + " of " +
         core::format_time(alone) + " alone (all-gather waits " + core::format_time(num(b, "allgather_wait_s")) +
         ", reductions after the backward " + core::format_time(num(b, "finalize_wait_s")) +
         ", compute slowed by NCCL kernels " + core::format_time(num(b, "contention_s")) + ")";
  } else {
    regime = "balanced";
    rt = "balanced between per-collective latency and overlap: " + std::to_string(b_nb) + " buckets, exposed comm " +
         core::format_time(b_exp) + " of " + core::format_time(alone) + " alone; the last bucket (" +
         core::format_bytes(num(b, "last_bucket_bytes")) + ") launches at " +
         core::format_time(num(b, "last_bucket_launch_s")) + ", the last gradient is ready at " +
         core::format_time(num(b, "last_gradient_ready_s"));
  }
  // Where every other point loses mostly on compute, that is why the best wins; its communication
  // regime follows.
  bool all_compute = !losers.empty();
  for (const auto& l : losers) all_compute = all_compute && l["kind"] == "compute";
  if (all_compute) rt = "the least compute (compute only " + core::format_time(num(b, "compute_only_s")) + "); " + rt;
  rec["regime"] = regime;
  rec["regime_text"] = rt;
  // The seeds' rule of thumb for bucket_cap_mb by inter-node bandwidth, per network in the sweep.
  if (std::find(param_paths.begin(), param_paths.end(), "ddp.bucket_cap_mb") != param_paths.end()) {
    std::map<double, size_t> best_by_net;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].contains("error") || !rows[i].contains("inter_node_gbps")) continue;
      double g = rows[i]["inter_node_gbps"].get<double>();
      auto it = best_by_net.find(g);
      if (it == best_by_net.end() || num(rows[i], "step_time_s") < num(rows[it->second], "step_time_s"))
        best_by_net[g] = i;
    }
    core::Json rules = core::Json::array();
    for (const auto& [g, i] : best_by_net) {
      double cap = num(rows[i], "bucket_cap_mb");
      core::Json rule{{"inter_node_gbps", g}, {"best_mb", cap}, {"best_point", rows[i]["point"]}};
      char t[256];
      if (g <= 0) {
        rule["range_mb"] = nullptr;
        rule["within"] = nullptr;
        std::snprintf(t, sizeof t, "one node, no inter-node network: the rule of thumb does not apply (best %g MB)",
                      cap);
      } else {
        double lo = g >= 200 ? 25 : g >= 100 ? 10 : 5, hi = g >= 200 ? 50 : g >= 100 ? 25 : 10;
        bool within = cap >= lo && cap <= hi;
        rule["range_mb"] = {lo, hi};
        rule["within"] = within;
        std::snprintf(t, sizeof t,
                      "rule of thumb for %g Gb/s per node (>= 200: 25-50 MB; 100-200: 10-25; < 100: 5-10): %g-%g MB; "
                      "simulated best %g MB: %s",
                      g, lo, hi, cap, within ? "within it" : "outside it");
      }
      rule["text"] = t;
      rules.push_back(rule);
    }
    rec["rule_of_thumb"] = rules;
  }
  return rec;
}

std::string recommendation_text(const core::Json& rec) {
  if (!rec.contains("best_point")) return "";
  std::ostringstream o;
  o << "why the best wins: " << rec["regime_text"].get<std::string>() << "\n";
  for (const auto& l : rec["losers"]) o << "  " << l["text"].get<std::string>() << "\n";
  if (rec.contains("rule_of_thumb"))
    for (const auto& r : rec["rule_of_thumb"]) o << r["text"].get<std::string>() << "\n";
  return o.str();
}

std::string bench_table(const std::string& scenario_file, int repeat, const core::Json& cases) {
  std::ostringstream o;
  o << "bench: " << scenario_file << "\n  world_size    params   buckets       flows   wall s/step (median of "
    << repeat << ")   peak RSS MiB\n";
  for (const auto& c : cases) {
    char b[200];
    std::snprintf(b, sizeof b, "  %10d  %8d  %8lld  %10llu   %.4f%34.1f\n", c["world_size"].get<int>(),
                  c["num_params"].get<int>(), c["num_buckets"].get<long long>(), c["flows"].get<unsigned long long>(),
                  c["wall_s_per_step"].get<double>(), c["peak_rss_mib"].get<double>());
    o << b;
  }
  return o.str();
}

std::string scaling_table(const std::string& scenario_file, int repeat, const core::Json& cases) {
  std::ostringstream o;
  o << "bench --scaling: " << scenario_file << " (wall s per simulated step: median of " << repeat << ")\n"
    << "        GPUs       flows   wall s/step   peak RSS MiB\n";
  for (const auto& c : cases) {
    char b[200];
    std::snprintf(b, sizeof b, "  %10d  %10llu  %12.4f  %13.1f\n", c["world_size"].get<int>(),
                  c["flows"].get<unsigned long long>(), c["wall_s_per_step"].get<double>(),
                  c["peak_rss_mib"].get<double>());
    o << b;
  }
  return o.str();
}

}  // namespace ddpsim::report

namespace ddpsim::report {

std::string link_table(const StepReport& r) {
  if (r.link_steps <= 0 || r.link_classes.empty()) return "";
  const core::Json classes = links_json(r);
  bool timed = false;
  for (const auto& c : classes) timed = timed || !c["busy_share"].is_null();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head{"link class", "links", "bytes/step", "per link"};
  if (timed)
    for (const char* h : {"busy", "mean util", "busiest link", "util"}) head.push_back(h);
  for (const auto& c : classes) {
    std::vector<std::string> row{c["class"].get<std::string>(), std::to_string(c["links"].get<long long>()),
                                 core::format_bytes(c["bytes"].get<double>()),
                                 core::format_bytes(c["bytes_per_link"].get<double>())};
    if (timed) {
      if (c["busy_share"].is_null()) {
        for (int i = 0; i < 4; ++i) row.push_back("-");
      } else {
        row.push_back(core::percent1_text(c["busy_share"].get<double>()));
        row.push_back(core::percent1_text(c["mean_utilisation"].get<double>()));
        row.push_back(c["busiest_link"]["name"].get<std::string>());
        row.push_back(core::percent1_text(c["busiest_link"]["utilisation"].get<double>()));
      }
    }
    cells.push_back(std::move(row));
  }
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i) {
    w[i] = head[i].size();
    for (const auto& row : cells) w[i] = std::max(w[i], row[i].size());
  }
  std::ostringstream o;
  o << "\nlinks (per steady step" << (r.link_steps > 1 ? ", mean of " + std::to_string(r.link_steps) + " steps" : "")
    << "; " << (timed ? "busy: share of the step the class's busiest link carried traffic" : "bytes only") << ")\n";
  auto put = [&](const std::vector<std::string>& row) {
    o << " ";
    for (size_t i = 0; i < row.size(); ++i) {
      const bool left = i == 0 || (timed && i == 6);
      o << ' '
        << (left ? row[i] + std::string(w[i] - row[i].size(), ' ') : std::string(w[i] - row[i].size(), ' ') + row[i]);
    }
    o << "\n";
  };
  put(head);
  for (const auto& row : cells) put(row);
  const core::Json best = busiest_link_json(r);
  if (!best.is_null())
    o << "  busiest link " << best["name"].get<std::string>() << " (" << best["class"].get<std::string>()
      << "): " << core::percent1_text(best["utilisation"].get<double>()) << " utilised, busy "
      << core::percent1_text(best["busy_share"].get<double>()) << " of the step\n";
  if (!r.links_note.empty()) o << "  " << r.links_note << "\n";
  return o.str();
}

}  // namespace ddpsim::report
