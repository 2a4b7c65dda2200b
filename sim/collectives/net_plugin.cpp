#include "collectives/net_plugin.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "collectives/nccl_model.hpp"

namespace ddpsim::collectives {

NetPlugin parse_net_plugin(const std::string& name) {
  if (name.empty()) return NetPlugin::NONE;
  if (name == "aws-ofi-nccl/p4d") return NetPlugin::AWS_OFI_P4D;
  if (name == "aws-ofi-nccl/p5") return NetPlugin::AWS_OFI_P5;
  if (name == "aws-ofi-nccl/p5en") return NetPlugin::AWS_OFI_P5EN;
  if (name == "aws-ofi-nccl/p6") return NetPlugin::AWS_OFI_P6;
  throw std::invalid_argument("unknown net plugin \"" + name +
                              "\" (allowed: aws-ofi-nccl/p4d, aws-ofi-nccl/p5, aws-ofi-nccl/p5en, aws-ofi-nccl/p6)");
}

std::string to_string(NetPlugin p) {
  switch (p) {
    case NetPlugin::NONE: return "";
    case NetPlugin::AWS_OFI_P4D: return "aws-ofi-nccl/p4d";
    case NetPlugin::AWS_OFI_P5: return "aws-ofi-nccl/p5";
    case NetPlugin::AWS_OFI_P5EN: return "aws-ofi-nccl/p5en";
    case NetPlugin::AWS_OFI_P6: return "aws-ofi-nccl/p6";
  }
  return "";
}

namespace aws_ofi_detail {

constexpr double kUsec = 1e-6;
constexpr double kMiB = 1024.0 * 1024.0;

// src/platform-aws.cpp platform_data_map (entries "p4d.24xlarge", "p5/p5e", "p5en/p6-b200") and
// src/tuner/nccl_ofi_model.cpp model_platform_params (P5 & P5e, P5en; none for P6, whose EFA step
// is taken as p5en's: the same platform_data_map entry serves both), include/nccl_ofi_param.h
// TUNER_NET_COMP_OVERHEAD.
const AwsOfiPlatform kP4d{
    .name = "p4d.24xlarge", .reported_latency_s = 75.0 * kUsec, .rdma = false, .buffsize = 8 * kMiB};
const AwsOfiPlatform kP5{.name = "p5/p5e",
                         .reported_latency_s = 75.0 * kUsec,
                         .rdma = true,
                         .buffsize = 8 * kMiB,
                         .nvls_chunk = 512 * 1024.0,
                         .nvlstree_max_chunk = 512 * 1024.0,
                         .model_net_lat_s = 20.0 * kUsec,
                         .comp_overhead_s = 3.0 * kUsec,
                         .region_tuner = true};
const AwsOfiPlatform kP5en{.name = "p5en/p6-b200",
                           .reported_latency_s = 35.0 * kUsec,
                           .rdma = true,
                           .buffsize = 8 * kMiB,
                           .nvls_chunk = 512 * 1024.0,
                           .nvlstree_max_chunk = 512 * 1024.0,
                           .model_net_lat_s = 18.0 * kUsec,
                           .comp_overhead_s = 3.0 * kUsec,
                           .region_tuner = true};
AwsOfiPlatform p6_of(AwsOfiPlatform p) {
  p.model_net_lat_from = "p5en";
  return p;
}
const AwsOfiPlatform kP6 = p6_of(kP5en);

// ---- nccl_ofi_regions.cpp geometry, in log2 space ----
constexpr double kEps = 1e-10;

TunerPoint to_log2(TunerPoint p) {  // nccl_ofi_tuner_point_t::transform_log2
  const double eps = 1e-6;
  if (p.x == 0) p.x = eps;
  if (p.y == 0) p.y = eps;
  return {std::log2(p.x), std::log2(p.y)};
}
TunerPoint vsub(TunerPoint a, TunerPoint b) { return {a.x - b.x, a.y - b.y}; }
double vdot(TunerPoint a, TunerPoint b) { return a.x * b.x + a.y * b.y; }
double vcross(TunerPoint a, TunerPoint b) { return a.x * b.y - a.y * b.x; }

// intersect(): 1 the segments cross, -1 not, 0 too close to y0 or y1 (or parallel).
int intersect(TunerPoint x0, TunerPoint x1, TunerPoint y0, TunerPoint y1, double eps, TunerPoint* sect) {
  const TunerPoint dx = vsub(x1, x0);
  const TunerPoint dy = vsub(y1, y0);
  const double d = vcross(dy, dx);
  if (std::fabs(d) < eps) return 0;
  long double a = static_cast<long double>(vcross(x0, dx) - vcross(y0, dx)) / d;
  if (sect) *sect = {static_cast<double>(y0.x + a * dy.x), static_cast<double>(y0.y + a * dy.y)};
  if (a < -eps || a > 1 + eps) return -1;
  if (a < eps || a > 1 - eps) return 0;
  a = (vcross(x0, dy) - vcross(y0, dy)) / d;
  if (a < 0 || a > 1) return -1;
  return 1;
}

double distance(TunerPoint x, TunerPoint y0, TunerPoint y1, double eps) {
  const TunerPoint dy = vsub(y1, y0);
  TunerPoint s{0, 0};
  const TunerPoint x1{x.x + dy.y, x.y - dy.x};
  if (intersect(x, x1, y0, y1, eps, &s) == -1) return HUGE_VAL;
  s = vsub(s, x);
  return std::sqrt(vdot(s, s));
}

// is_inside_region on points already in log2 scale.
int inside_log2(TunerPoint point, const std::vector<TunerPoint>& v) {
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i)
    if (distance(point, v[i], v[(i + 1) % n], kEps) < kEps) return 0;  // on the edge
  // The source's bounding box starts y from vertices[1] (kept as written).
  double min_x = v[0].x, max_x = v[0].x, min_y = v[1].y, max_y = v[1].y;
  for (const TunerPoint& p : v) {
    max_x = std::max(max_x, p.x);
    min_x = std::min(min_x, p.x);
    max_y = std::max(max_y, p.y);
    min_y = std::min(min_y, p.y);
  }
  if (point.x < min_x || point.x > max_x || point.y < min_y || point.y > max_y) return -1;
  const TunerPoint e = to_log2({2.0 * kAwsOfiTunerMaxSize, 2.0 * kAwsOfiTunerMaxRanks});
  int crosses = 0;
  for (size_t i = 0; i < n; ++i)
    if (intersect(point, e, v[i], v[(i + 1) % n], kEps, nullptr) == 1) ++crosses;
  return (crosses & 1) ? 1 : -1;
}

// is_inside_region on a point and polygon in linear scale: both to log2 (transform_log2), where
// the source's edges are straight. A scan converts a handful of regions of at most 17 vertices.
int inside_linear(TunerPoint point, const std::vector<TunerPoint>& polygon) {
  std::vector<TunerPoint> v;
  v.reserve(polygon.size());
  for (const TunerPoint& q : polygon) v.push_back(to_log2(q));
  return inside_log2(to_log2(point), v);
}

// region_get_coll_info_internal_v3's scan: the first enabled region containing the point
// (in_out >= 0); a PAT region (no modelled algorithm) is skipped and remembered.
struct Scan {
  const AwsOfiRegion* region = nullptr;
  bool pat = false;
};
Scan scan(NetPlugin p, Func func, int nranks, int nnodes, double bytes,
          const std::function<bool(Algo, Proto)>& enabled) {
  Scan out;
  const TunerPoint pt{bytes, static_cast<double>(nranks)};
  for (const AwsOfiRegion& r : aws_ofi_regions(p, func, nranks, nnodes)) {
    if (!r.algo) {
      out.pat = out.pat || inside_linear(pt, r.vertices) >= 0;
      continue;
    }
    if (!enabled(*r.algo, r.proto)) continue;
    if (inside_linear(pt, r.vertices) >= 0) {
      out.region = &r;
      return out;
    }
  }
  return out;
}

}  // namespace aws_ofi_detail
using namespace aws_ofi_detail;

namespace {
// A platform entry as an earlier release had it (see kAwsOfiRegionTuner in the header).
AwsOfiPlatform as_of(AwsOfiPlatform p, int version) {
  if (version >= kAwsOfiRegionTuner) return p;
  p.buffsize = 0;
  p.region_tuner = false;
  if (version < kAwsOfiNvlsChunks) p.nvls_chunk = p.nvlstree_max_chunk = 0;
  return p;
}
const AwsOfiPlatform kP4d18 = as_of(kP4d, kAwsOfiNvlsChunks), kP4d17 = as_of(kP4d, kAwsOfiGroupedRails);
const AwsOfiPlatform kP518 = as_of(kP5, kAwsOfiNvlsChunks), kP517 = as_of(kP5, kAwsOfiGroupedRails);
const AwsOfiPlatform kP5en18 = as_of(kP5en, kAwsOfiNvlsChunks), kP5en17 = as_of(kP5en, kAwsOfiGroupedRails);
}  // namespace

const AwsOfiPlatform* aws_ofi_platform(NetPlugin p, int v) {
  if (v != 0 && v < kAwsOfiGroupedRails) return nullptr;
  const bool now = v == 0 || v >= kAwsOfiRegionTuner, nvls = v == 0 || v >= kAwsOfiNvlsChunks;
  switch (p) {
    case NetPlugin::NONE: return nullptr;
    case NetPlugin::AWS_OFI_P4D: return now ? &kP4d : nvls ? &kP4d18 : &kP4d17;
    case NetPlugin::AWS_OFI_P5: return now ? &kP5 : nvls ? &kP518 : &kP517;
    case NetPlugin::AWS_OFI_P5EN: return now ? &kP5en : nvls ? &kP5en18 : &kP5en17;
    // P6 entered with its region tuner (1.16.0): an older plugin has none of it.
    case NetPlugin::AWS_OFI_P6: return v == 0 || v >= kAwsOfiP6 ? &kP6 : nullptr;
  }
  return nullptr;
}

TunerPoint aws_ofi_extend_region(TunerPoint a, TunerPoint b, TunerPoint z) {
  a = to_log2(a);
  b = to_log2(b);
  z = to_log2(z);
  TunerPoint r;
  if (a.x == b.x) {
    r = {a.x, z.y};
  } else if (a.y == b.y) {
    r = {z.x, a.y};
  } else {
    const double m = (a.y - b.y) / (a.x - b.x);
    const double c = b.y - m * b.x;
    const double projected_zy = m * z.x + c;
    if (projected_zy < z.y)
      r = {z.x, projected_zy};
    else
      r = {(z.y - c) / m, z.y};
  }
  return {std::pow(2.0, r.x), std::pow(2.0, r.y)};
}

int aws_ofi_inside_region(TunerPoint p, const std::vector<TunerPoint>& polygon) { return inside_linear(p, polygon); }

std::string aws_ofi_region_skip_reason(NetPlugin p, Func func, int nranks, int nnodes, int nccl_version,
                                       int plugin_version) {
  const AwsOfiPlatform* plat = aws_ofi_platform(p, plugin_version);
  // nccl_ofi_tuner.cpp nccl_ofi_tuner_init: is_region_supported (p5/p5e, p5en, p6) or the model
  // tuner (is_model_supported); p4d has neither. Releases before 1.10.0 have no region tuner.
  const std::string release = "aws-ofi-nccl " + nccl_version_string(plugin_version);
  if (!plat)
    return p == NetPlugin::NONE         ? "no net plugin"
           : p == NetPlugin::AWS_OFI_P6 ? release + " predates p6-b200 (1.16.0): nothing of its P6 support applies"
                                        : release + ": nothing of the plugin applies before 1.7.0";
  if (!plat->region_tuner)
    return aws_ofi_platform(p)->region_tuner
               ? release + " has no region tuner (1.10.0+" +
                     (plugin_version >= kAwsOfiNvlsChunks ? "; its model-based tuner is not modelled" : "") + ")"
               : std::string(plat->name) + " has no region tuner";
  // Tuner v3 (getCollInfo with the cost table) needs NCCL 2.22.3; v2 (2.21.5) picks the same way.
  if (nccl_version != 0 && nccl_version < 22105) return "NCCL before 2.21.5 loads no tuner plugin";
  // region_get_coll_info_internal_v3: "Skip when two nodes or lesser because the regions are not
  // well defined and fallback to NCCL's internal tunings".
  if (nnodes <= 2) return "two nodes or fewer: NCCL's own tuner";
  if (aws_ofi_regions(p, func, nranks, nnodes).empty())
    return "no regions for " + to_string(func) + " at " + std::to_string(nranks / nnodes) + " ranks per node";
  return "";
}

std::optional<RegionPick> aws_ofi_region_pick(NetPlugin p, Func func, int nranks, int nnodes, int nccl_version,
                                              double bytes, const std::function<bool(Algo, Proto)>& enabled,
                                              int plugin_version) {
  if (!aws_ofi_region_skip_reason(p, func, nranks, nnodes, nccl_version, plugin_version).empty()) return std::nullopt;
  const Scan s = scan(p, func, nranks, nnodes, bytes, enabled);
  if (!s.region) return std::nullopt;
  return RegionPick{*s.region->algo, s.region->proto};
}

double aws_ofi_tree_ll128_chunk(double bytes, int nchannels, int log2_nnodes) {
  // include/internal/tuner/nccl_defaults.h: NCCL_STEPS 8, LL128 640 threads x 120 elements per
  // thread, 8 shared-memory elements per thread, 128-byte lines of 16 words (15 of data), warps
  // of 32. Integer arithmetic as the source's uint64_t.
  using U = unsigned long long;
  constexpr U kSteps = 8, kElemsPerThread = 120, kMaxThreads = 640, kShmemElems = 8, kLineElems = 16, kDataElems = 15,
              kWarp = 32;
  const U message = static_cast<U>(bytes), nch = static_cast<U>(nchannels);
  const U buff = kElemsPerThread * kMaxThreads * kSteps * sizeof(std::uint64_t);
  U chunk = buff / kSteps;
  chunk = (chunk / kLineElems) * kDataElems;
  const int ppn = 8;
  const double steps = 1 + log2_nnodes + 0.1 * ppn;
  while (static_cast<double>(message / (nch * chunk)) < steps * 64 / ppn && chunk > 131072) chunk /= 2;
  while (static_cast<double>(message / (nch * chunk)) < steps * 16 / ppn && chunk > 32768) chunk /= 2;
  const U grain = kWarp * kShmemElems / kLineElems * kDataElems * sizeof(std::uint64_t);
  chunk = (chunk / grain) * grain;
  const U elements_per_grain = grain / sizeof(float);
  const U nelem = (chunk / grain) * elements_per_grain;
  const U wire_words = kWarp * kShmemElems;
  const U data_per_slice = (wire_words - wire_words / kLineElems) * (sizeof(std::uint64_t) / sizeof(float));
  return std::ceil(static_cast<double>(nelem) / static_cast<double>(data_per_slice)) *
         static_cast<double>(wire_words * sizeof(std::uint64_t));
}

int aws_ofi_region_channels(NetPlugin p, Func func, int nranks, int nnodes, double bytes, Algo algo, Proto proto,
                            int plugin_version) {
  if (p != NetPlugin::AWS_OFI_P6 || (plugin_version != 0 && plugin_version < kAwsOfiP6TreeChannels)) return 0;
  if (func != Func::ALL_REDUCE || algo != Algo::TREE || proto != Proto::LL128 || nranks != 8 * nnodes) return 0;
  constexpr double kMiB4 = 4.0 * 1024 * 1024, kMiB32 = 32.0 * 1024 * 1024;
  if (bytes < kMiB4 || bytes > kMiB32) return 0;
  const int log2_nnodes = log2i(nnodes);  // region_ctx->log2_nnodes = log2i(nNodes): rounded down
  int best = 0;
  double best_chunk = 0;
  for (const int ch : {16, 24, 32}) {
    const double c = aws_ofi_tree_ll128_chunk(bytes, ch, log2_nnodes);
    if (c > best_chunk || (c == best_chunk && ch > best)) {
      best_chunk = c;
      best = ch;
    }
  }
  return best;
}

bool aws_ofi_in_pat_region(NetPlugin p, Func func, int nranks, int nnodes, double bytes,
                           const std::function<bool(Algo, Proto)>& enabled) {
  const Scan s = scan(p, func, nranks, nnodes, bytes, enabled);
  return !s.region && s.pat;
}

}  // namespace ddpsim::collectives
