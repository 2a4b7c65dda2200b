#include "config/limits.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace ddpsim::config {

using core::Json;
using core::ObjectReader;

namespace {
// Costs measured on the Release build (one core of the CI machine; README "Limits"); the estimates
// only need to say roughly how long a run beyond a limit would take.
constexpr double kBytesPerGpu = 72;  // representative ranks: 4,194,304 GPUs in 0.3 s and 300 MB
// simulation.ranks "all": a host and links per GPU, every flow of a round sent by a pool of about
// 8 sqrt(flows) sender actors (network/flow.cpp). Whole `run` of GPT-2, ECMP 3-tier fat-tree, CPU
// seconds (user + sys) on the 2-core CI machine type, idle (load 1), 2026-12-02, with jemalloc and
// no engine teardown (docs/performance.md): with one stream and reused rounds (network/flow.hpp; a
// run simulates two rounds flow by flow) 1,024 GPUs 0.05 s, 4,096 0.15 s, 16,384 0.65 s, 32,768
// 1.4 s, 131,072 5.1-5.4 s (about N^1.03); every round simulated (reuse_rounds false, several NCCL
// streams or workers) 4,096 GPUs 1.1 s, 16,384 6.8 s (about N^1.3).
double seconds_all_ranks(double gpus, bool reused) {
  return reused ? 0.05 + 0.15 * std::pow(gpus / 4096.0, 1.03) : 0.05 + 1.1 * std::pow(gpus / 4096.0, 1.3);
}
// Explicit ranks: each step simulates every rank's compute stream and its waits on the others.
// With the compute stream's kernels as one timed wait per GPU-state change (engine/gpu_share):
// 64 GPUs x 150 steps (ResNet-50) 0.9 s, GPT-2 on 1,024 GPUs 0.32-0.43 s per step (README
// Performance); this over-estimates both a little.
double seconds_explicit_ranks(double gpus, double steps) { return steps * gpus * (2e-4 + 2e-7 * gpus); }
constexpr double kSecondsPerTensor = 31e-6;  // 200,000 tensors: 6.2 s, 400 MB

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}
std::string raise_to(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", std::ceil(v));
  return b;
}
}  // namespace

LimitSettings parse_limits(const Json& j, core::Diagnostics& d) {
  const LimitSettings def;
  LimitSettings s;
  ObjectReader r(j, "/limits", d);
  s.max_gpus = r.integer_or("max_gpus", def.max_gpus, 1, 1LL << 30);
  s.max_seconds = r.number_or("max_seconds", def.max_seconds, 0.0, true, 1e9);
  s.max_tensors = r.integer_or("max_tensors", def.max_tensors, 1, 1LL << 22);
  r.finish();
  return s;
}

void check_limits(const Scenario& s, core::Diagnostics& d) {
  const LimitSettings& L = s.limits;
  const double gpus = static_cast<double>(s.cluster.nodes) * s.cluster.gpus_per_node;
  const std::string g = raise_to(gpus);
  if (gpus > static_cast<double>(L.max_gpus))
    d.add("/nodes", g + " GPUs (" + std::to_string(s.cluster.nodes) + " nodes x " +
                        std::to_string(s.cluster.gpus_per_node) + ") is more than limits.max_gpus " +
                        std::to_string(L.max_gpus) + " (estimate: " + num(gpus * kBytesPerGpu / 1e9) +
                        " GB of memory); raise it with --set limits.max_gpus=" + g);
  if (s.simulation.ranks == RankMode::ALL && gpus > 1) {
    const double t = seconds_all_ranks(
        gpus, s.simulation.reuse_rounds && s.streams.comm_streams <= 1 && s.streams.comm_workers <= 1);
    if (t > L.max_seconds)
      d.add("/simulation/ranks",
            "\"all\" builds a host and links per GPU and simulates every flow: " + g + " GPUs would take about " +
                num(t) + " s, more than limits.max_seconds " + num(L.max_seconds) +
                "; use \"representative\", fewer nodes, or raise it with --set limits.max_seconds=" + raise_to(t));
  }
  if (s.stragglers.explicit_ranks() && gpus > 1) {
    const double t = seconds_explicit_ranks(gpus, s.stragglers.steps);
    if (t > L.max_seconds)
      d.add("/stragglers",
            "explicit ranks (jitter_cv or slow_ranks) simulate every rank's compute for stragglers.steps: " + g +
                " GPUs x " + std::to_string(s.stragglers.steps) + " steps would take about " + num(t) +
                " s, more than limits.max_seconds " + num(L.max_seconds) +
                "; lower stragglers.steps or nodes, or raise it with --set limits.max_seconds=" + raise_to(t));
  }
  const long long tensors = static_cast<long long>(s.model.params.size());
  if (tensors > L.max_tensors)
    d.add("/model", "model \"" + s.model.name + "\" has " + std::to_string(tensors) +
                        " parameter tensors, more than limits.max_tensors " + std::to_string(L.max_tensors) +
                        " (estimate: " + num(tensors * kSecondsPerTensor) +
                        " s); raise it with --set limits.max_tensors=" + std::to_string(tensors));
}

}  // namespace ddpsim::config
