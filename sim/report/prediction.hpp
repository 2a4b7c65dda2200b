#pragma once
// How far a step-time prediction can be trusted: a likely band around it and what each part of it
// rests on, from the project's own validation tables (docs/accuracy.md, "The prediction band").
// SimGrid-free; the tables are data here, the arithmetic is tested by hand
// (tests/unit/report/Prediction_test.cpp).
#include <array>
#include <string>
#include <vector>

#include "collectives/validated.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::report {

struct StepReport;

// One validated part of the prediction: what it is, how it is obtained, the relative error of the
// truth against the prediction that its validation showed (truth = predicted x (1 + e), e in
// [low, high]), and the validation in words with its numbers.
struct BandPart {
  std::string part;  // "compute", "ddp", "collectives"
  std::string kind;  // "measured", "calibrated", "transferred", "estimated", "simulated"
  double low = 0, high = 0;
  std::string validation;
  bool host_heavy = false;  // an estimate whose modelled host dispatch sets its band (kHostHeavyShare)
};

// The collectives' time alone by NCCL function and size class (collectives::size_class): each
// class has its own validated error (collectives::Trust::error_in).
struct CommByFunction {
  std::array<std::array<double, 3>, collectives::kNumFuncs> seconds{};  // [function][size class]
  void add(collectives::Func f, double nccl_tests_bytes, double s) {
    seconds[static_cast<size_t>(f)][static_cast<size_t>(collectives::size_class(nccl_tests_bytes))] += s;
  }
  void add(const CommByFunction& o, double w = 1.0) {
    for (size_t f = 0; f < seconds.size(); ++f)
      for (size_t k = 0; k < seconds[f].size(); ++k) seconds[f][k] += w * o.seconds[f][k];
  }
  double in(collectives::Func f, collectives::SizeClass k) const {
    return seconds[static_cast<size_t>(f)][static_cast<size_t>(k)];
  }
  double of(collectives::Func f) const {
    const auto& a = seconds[static_cast<size_t>(f)];
    return a[0] + a[1] + a[2];
  }
  double total() const {
    double t = 0;
    for (size_t f = 0; f < seconds.size(); ++f) t += of(static_cast<collectives::Func>(f));
    return t;
  }
  // Sum over f's size classes of its seconds times the error `t` gives the class.
  double error_seconds(collectives::Func f, const collectives::Trust& t) const {
    double e = 0;
    for (const auto k : collectives::kSizeClasses) e += in(f, k) * t.error_in(k);
    return e;
  }
};

// What the collectives part needs to know of a run (filled from the scenario by report/metrics.cpp).
struct CommBasis {
  bool communicates = false;  // world size > 1
  bool measured = false;      // collective.measured_allreduce: the run's own all-reduce table
  bool ring = false;          // collective.model "ring" (the plain ring, not NCCL's model)
  bool calibrated = false;    // the cluster's NCCL figures fitted to a log (`ddpsim calibrate`)
  int calibrated_nodes = 0;   // the log's node count (0: not recorded in the cluster file)
  std::string cluster, gpu, net_plugin;
  int nodes = 1;
  // How far the collectives' error reaches the step: every second of communication, stretched,
  // lengthens it at most by as much (busy: comm_busy_s); made shorter, it shortens by at most what
  // the step waits for (exposed: exposed_comm_s).
  double busy_s = 0, exposed_s = 0;
  // The step's collectives alone by function and size: each class is weighted by its share of
  // this time at its own validated error (all zero: every second at the all-reduce's >= 1 MiB one).
  CommByFunction by_function{};
};

struct Prediction {
  double step_s = 0;
  double low_s = 0, high_s = 0;  // the likely band of the real step time
  // The smallest relative difference between two predictions of one model on one machine that the
  // validation can resolve: rows closer than this are a tie (compare/decide).
  double resolution = 0;
  std::string resolution_basis;
  std::vector<BandPart> parts;
  std::string summary;    // "compute estimated, DDP simulated"
  double host_share = 0;  // the per-kernel model's host dispatch over the compute it launches (0: none)
  double comm_busy_s = 0, comm_exposed_s = 0;  // the collectives part's reach (CommBasis)
  double cpu_step_s = 0;                       // the cpu_optimizer part's reach (FSDP CPU offload)
};

// The estimated compute's range (e) and where a prediction counts as host-heavy (its modelled
// host dispatch at least this share of its compute): report/prediction.cpp says what each rests
// on; tests/sim/PredictionBand_test.cpp recomputes them.
inline constexpr double kEstimatedLow = -0.228;
inline constexpr double kEstimatedHigh = 0.336;
inline constexpr double kEstimatedHostHeavyHigh = 2.448;
inline constexpr double kHostHeavyShare = 0.5;

// The part tables (exposed for the tests and docs). host_frac: the per-kernel model's host
// dispatch over the compute it launches (host_share(StepReport)); it matters to an estimate only.
BandPart compute_part(const std::string& provenance, double compute_scale, double host_frac = 0);
BandPart ddp_part(int world_size);
// The collectives part (none when !communicates or measured: `part` is then empty). Its range is
// [-x / (1 + x), +x] for a |busbw error| x: per NCCL function and size class of by_function, the
// closest validated table's median of that collective in that size class (collectives/validated.hpp
// trust()), raised to the held-out figure where the run leaves that table's preset or node count,
// weighted by the class's share of the time; calibrated: calibrate --holdout's worst median.
BandPart collectives_part(const CommBasis& c);
double tie_resolution();
// FSDP CPU offload's optimizer step on the host (gpu::cpu_optimizer_step), on its own seconds
// `step_s`: measured on one CPU (this project's VM) with a published page-fault cost, so its range
// [low_s, high_s] is what another host may do differently (plan::FsdpOffload).
BandPart cpu_optimizer_part(double step_s, double low_s, double high_s);

// step_s and compute_only_s: the steady step and its compute-only time. The compute part's error
// applies to compute_only_s, the DDP part's to the whole step (it was validated on whole steps
// with the compute measured): low = step + compute_only x c.low + step x d.low, high likewise;
// the collectives part adds exposed x k.low and busy x k.high; the band always holds the
// prediction itself.
Prediction prediction(double step_s, double compute_only_s, const std::string& provenance, double compute_scale,
                      int world_size, double host_frac = 0);
// With the collectives part: its range on comm.busy_s (high end) and comm.exposed_s (low end),
// added to the two above.
Prediction prediction(double step_s, double compute_only_s, const std::string& provenance, double compute_scale,
                      int world_size, double host_frac, const CommBasis& comm);
// host_share of a report: compute_host_forward_s + compute_host_backward_s over one micro-step's
// compute_only_s (0 without the per-kernel model's host figures).
double host_share(const StepReport& r);
Prediction prediction(const StepReport& r);

core::Json prediction_json(const Prediction& p);
// A band's two ends as the summary prints them ("21-31 ms").
std::string band_text(double low, double high);
// "likely 21.0 ms - 31.0 ms: compute estimated, DDP simulated"
std::string prediction_text(const Prediction& p);

}  // namespace ddpsim::report
