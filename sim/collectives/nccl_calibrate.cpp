// Calibration of the NCCL model to measured all_reduce_perf times (see nccl_model.hpp
// calibrate() and sim/collectives/NOTES.md "Calibration").
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "collectives/nccl_model.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"

namespace ddpsim::collectives {
namespace {
constexpr double kMicrosecond = 1e-6;
}  // namespace

// ---- calibration ------------------------------------------------------------------------------
namespace {

// Deterministic Nelder-Mead on f, restarted from the best vertex (smaller steps each time) until a
// restart no longer improves: the objective is piecewise smooth, algorithm/protocol switches make
// kinks where a single run can stall.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> best,
                                const std::vector<double>& step, int* iterations) {
  const size_t n = best.size();
  double fbest = f(best);
  for (int restart = 0; restart < 10; ++restart) {
    std::vector<std::vector<double>> s(n + 1, best);
    std::vector<double> fs(n + 1);
    for (size_t i = 0; i < n; ++i) s[i + 1][i] += step[i] / (1 + restart);
    for (size_t i = 0; i <= n; ++i) fs[i] = f(s[i]);
    std::vector<size_t> o(n + 1);
    for (int it = 0; it < 300 * static_cast<int>(n); ++it, ++*iterations) {
      for (size_t i = 0; i <= n; ++i) o[i] = i;
      std::sort(o.begin(), o.end(), [&](size_t a, size_t b) { return fs[a] < fs[b] || (fs[a] == fs[b] && a < b); });
      if (fs[o[n]] - fs[o[0]] <= 1e-12 * (1 + fs[o[0]])) break;
      std::vector<double> c(n, 0.0);
      for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < n; ++k) c[k] += s[o[i]][k] / static_cast<double>(n);
      auto along = [&](double t) {
        std::vector<double> y(n);
        for (size_t k = 0; k < n; ++k) y[k] = c[k] + t * (s[o[n]][k] - c[k]);
        return y;
      };
      const auto xr = along(-1.0);
      const double fr = f(xr);
      if (fr < fs[o[0]]) {
        const auto xe = along(-2.0);
        const double fe = f(xe);
        if (fe < fr) {
          s[o[n]] = xe;
          fs[o[n]] = fe;
        } else {
          s[o[n]] = xr;
          fs[o[n]] = fr;
        }
      } else if (fr < fs[o[n - 1]]) {
        s[o[n]] = xr;
        fs[o[n]] = fr;
      } else {
        const auto xc = fr < fs[o[n]] ? along(-0.5) : along(0.5);
        const double fc = f(xc);
        if (fc < std::min(fr, fs[o[n]])) {
          s[o[n]] = xc;
          fs[o[n]] = fc;
        } else {  // shrink toward the best vertex
          for (size_t i = 1; i <= n; ++i) {
            for (size_t k = 0; k < n; ++k) s[o[i]][k] = s[o[0]][k] + 0.5 * (s[o[i]][k] - s[o[0]][k]);
            fs[o[i]] = f(s[o[i]]);
          }
        }
      }
    }
    size_t b = 0;
    for (size_t i = 1; i <= n; ++i)
      if (fs[i] < fs[b]) b = i;
    const bool improved = fs[b] < fbest * (1 - 1e-9);
    if (fs[b] <= fbest) {
      best = s[b];
      fbest = fs[b];
    }
    if (!improved && restart > 0) break;
  }
  return best;
}

// Parameter vector: [0] log achieved_all.bw_factor, [1] achieved_all.latency_offset (us),
// [2] log launch overhead (only if fitted), then per fitted (algo, proto): log bw factor, offset (us).
struct Layout {
  bool launch = false;
  std::vector<std::pair<int, int>> pairs;  // (algo, proto) with their own knobs (stage 2)
};

NcclTopology apply(const NcclTopology& start, const Layout& l, const std::vector<double>& x) {
  NcclTopology t = start;
  t.achieved_all.bw_factor = std::exp(x[0]);
  t.achieved_all.latency_offset = x[1] * kMicrosecond;
  size_t k = 2;
  if (l.launch) t.launch_overhead = std::exp(x[k++]) * kHostLaunchSeconds;
  for (auto [a, p] : l.pairs) {
    t.achieved[a][p].bw_factor = std::exp(x[k++]);
    t.achieved[a][p].latency_offset = x[k++] * kMicrosecond;
  }
  return t;
}

double predict_point(const NcclTopology& t, const CalibrationPoint& pt, const NcclSettings& settings) {
  return predict_allreduce(as_launched(t, pt), pt.bytes, settings).time;
}

}  // namespace

NcclTopology as_launched(const NcclTopology& t, const CalibrationPoint& pt) {
  NcclTopology u = t;
  if (pt.gpus_per_process > 0) u.gpus_per_process = pt.gpus_per_process;
  if (pt.cuda_graph >= 0) u.cuda_graph = pt.cuda_graph > 0;
  return u;
}

NcclTopology calibrate(const NcclTopology& start, const std::vector<std::pair<double, double>>& pts, NcclFit* fit,
                       const NcclSettings& settings) {
  std::vector<CalibrationPoint> points;
  for (const auto& [b, s] : pts) points.push_back({b, s, 0, -1});
  return calibrate(start, points, fit, settings);
}

NcclTopology calibrate(const NcclTopology& start, const std::vector<CalibrationPoint>& pts, NcclFit* fit,
                       const NcclSettings& settings) {
  validate(start);
  if (pts.empty()) throw std::invalid_argument("calibrate: no (bytes, seconds) points given");
  for (size_t i = 0; i < pts.size(); ++i)
    if (!(pts[i].bytes > 0) || !(pts[i].seconds > 0))
      throw std::invalid_argument("calibrate: point " + std::to_string(i) + " (" + core::number_text(pts[i].bytes) +
                                  " B, " + core::number_text(pts[i].seconds) + " s) is not positive");
  if (start.nranks <= 1) throw std::invalid_argument("calibrate: a single rank has no all-reduce time to fit");

  Layout layout;
  for (const auto& pt : pts) {
    const NcclTopology u = as_launched(start, pt);
    if (u.gpus_per_process > 1 && host_steps(u)) layout.launch = true;
  }
  // Soft L1 on the log ratio (about |r| beyond 1 %): one disturbed row of a log (a timing glitch)
  // does not drag the fit, and the fit aims at the median error users read.
  auto loss = [&](const NcclTopology& t, const std::vector<CalibrationPoint>& points) {
    double sum = 0;
    try {
      for (const auto& pt : points) {
        const double pred = predict_point(t, pt, settings);
        if (!(pred > 0)) return std::numeric_limits<double>::max();
        const double r = std::log(pred / pt.seconds);
        sum += std::sqrt(r * r + 1e-4);
      }
    } catch (const std::invalid_argument&) {
      return std::numeric_limits<double>::max();
    }
    return sum;
  };
  auto usable = [](const std::vector<double>& x) {
    for (double v : x)
      if (!std::isfinite(v)) return false;
    return std::abs(x[0]) <= 5;  // bandwidth factor within e^-5 .. e^5
  };

  // Stage 1: knobs shared by every pair.
  std::vector<double> x = {std::log(start.achieved_all.bw_factor), start.achieved_all.latency_offset / kMicrosecond};
  std::vector<double> step = {0.3, 5.0};
  if (layout.launch) {
    x.push_back(std::log(start.launch_overhead / kHostLaunchSeconds));
    step.push_back(0.2);
  }
  int iterations = 0;
  x = nelder_mead(
      [&](const std::vector<double>& v) {
        return usable(v) ? loss(apply(start, layout, v), pts) : std::numeric_limits<double>::max();
      },
      x, step, &iterations);

  // Stage 2: own knobs for the pairs NCCL picks on >= 2 measured sizes. The pick does not depend
  // on the post-pick knobs, so the objective separates: each pair is fitted on its own points.
  Layout full = layout;
  std::array<std::array<std::vector<CalibrationPoint>, kNumProtos>, kNumAlgos> by_pair;
  for (const auto& pt : pts) {
    const auto e = predict_allreduce(as_launched(start, pt), pt.bytes, settings);
    by_pair[static_cast<int>(e.algo)][static_cast<int>(e.proto)].push_back(pt);
  }
  const NcclTopology stage1 = apply(start, layout, x);
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p) {
      const auto& own = by_pair[a][p];
      if (own.size() < 2) continue;
      auto f = [&](const std::vector<double>& v) {
        if (!usable(v)) return std::numeric_limits<double>::max();
        NcclTopology t = stage1;
        t.achieved[a][p].bw_factor = std::exp(v[0]);
        t.achieved[a][p].latency_offset = v[1] * kMicrosecond;
        const double prior = 1e-3 * (v[0] * v[0] + (v[1] / 10.0) * (v[1] / 10.0));  // stay near stage 1
        const double l = loss(t, own);
        return l == std::numeric_limits<double>::max() ? l : l + prior;
      };
      const auto v =
          nelder_mead(f, {std::log(start.achieved[a][p].bw_factor), start.achieved[a][p].latency_offset / kMicrosecond},
                      {0.2, 3.0}, &iterations);
      full.pairs.push_back({a, p});
      x.push_back(v[0]);
      x.push_back(v[1]);
    }

  const NcclTopology fitted = apply(start, full, x);
  if (fit) {
    fit->topology = fitted;
    fit->relative_errors.clear();
    double sq = 0;
    std::vector<double> abs_err;
    for (const auto& pt : pts) {
      const double r = (predict_point(fitted, pt, settings) - pt.seconds) / pt.seconds;
      fit->relative_errors.push_back(r);
      abs_err.push_back(std::abs(r));
      sq += r * r;
    }
    fit->rms_relative_error = std::sqrt(sq / pts.size());
    fit->median_abs_relative_error = core::median(abs_err);
    fit->iterations = iterations;
  }
  return fitted;
}

}  // namespace ddpsim::collectives
