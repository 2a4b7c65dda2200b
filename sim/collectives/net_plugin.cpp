#include "collectives/net_plugin.hpp"

#include <cmath>
#include <stdexcept>

#include "collectives/nccl_model.hpp"

namespace ddpsim::collectives {

NetPlugin parse_net_plugin(const std::string& name) {
  if (name.empty()) return NetPlugin::NONE;
  if (name == "aws-ofi-nccl/p4d") return NetPlugin::AWS_OFI_P4D;
  if (name == "aws-ofi-nccl/p5") return NetPlugin::AWS_OFI_P5;
  if (name == "aws-ofi-nccl/p5en") return NetPlugin::AWS_OFI_P5EN;
  throw std::invalid_argument("unknown net plugin \"" + name +
                              "\" (allowed: aws-ofi-nccl/p4d, aws-ofi-nccl/p5, aws-ofi-nccl/p5en)");
}

std::string to_string(NetPlugin p) {
  switch (p) {
    case NetPlugin::NONE: return "";
    case NetPlugin::AWS_OFI_P4D: return "aws-ofi-nccl/p4d";
    case NetPlugin::AWS_OFI_P5: return "aws-ofi-nccl/p5";
    case NetPlugin::AWS_OFI_P5EN: return "aws-ofi-nccl/p5en";
  }
  return "";
}

namespace aws_ofi_detail {

constexpr double kUsec = 1e-6;
constexpr double kMiB = 1024.0 * 1024.0;

// src/platform-aws.cpp platform_data_map (entries "p4d.24xlarge", "p5/p5e", "p5en/p6-b200") and
// src/tuner/nccl_ofi_model.cpp model_platform_params (P5 & P5e, P5en), include/nccl_ofi_param.h
// TUNER_NET_COMP_OVERHEAD.
const AwsOfiPlatform kP4d{"p4d.24xlarge", 75.0 * kUsec, false, 8 * kMiB, 0, 0, 0, 0, false};
const AwsOfiPlatform kP5{"p5/p5e",     75.0 * kUsec, true,        8 * kMiB, 512 * 1024.0,
                         512 * 1024.0, 20.0 * kUsec, 3.0 * kUsec, true};
const AwsOfiPlatform kP5en{"p5en/p6-b200", 35.0 * kUsec, true,        8 * kMiB, 512 * 1024.0,
                           512 * 1024.0,   18.0 * kUsec, 3.0 * kUsec, true};

// ---- nccl_ofi_regions.cpp geometry, in log2 space ----
constexpr double kTunerMaxRanks = 1024.0 * 1024;              // TUNER_MAX_RANKS
constexpr double kTunerMaxSize = 100.0 * 1024 * 1024 * 1024;  // TUNER_MAX_SIZE
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
  const TunerPoint e = to_log2({2.0 * kTunerMaxSize, 2.0 * kTunerMaxRanks});
  int crosses = 0;
  for (size_t i = 0; i < n; ++i)
    if (intersect(point, e, v[i], v[(i + 1) % n], kEps, nullptr) == 1) ++crosses;
  return (crosses & 1) ? 1 : -1;
}

struct Region {
  Algo algo;
  Proto proto;
  std::vector<TunerPoint> vertices;  // linear scale, as written in the source
};

const TunerPoint kZ{kTunerMaxSize, kTunerMaxRanks};

// region_init_internal_p5_p5e, ncclFuncAllReduce, nRanks == 8 * nNodes (in the source's order).
std::vector<Region> p5_allreduce() {
  const TunerPoint tree_ll128 = aws_ofi_extend_region({402653184, 2048}, {402653184, 4096}, kZ);
  const TunerPoint nvlstree_1 = aws_ofi_extend_region({8053063680, 160}, {9663676416, 192}, kZ);
  const TunerPoint nvlstree_2 = aws_ofi_extend_region({402653184, 2048}, {402653184, 4096}, kZ);
  const TunerPoint ring_simple = aws_ofi_extend_region({8053063680, 160}, {9663676416, 192}, kZ);
  return {
      {Algo::TREE,
       Proto::LL128,
       {{0, 16},
        {31457280, 16},
        {37748736, 32},
        {117440512, 64},
        {301989888, 128},
        {301989888, 256},
        {335544320, 512},
        {536870912, 1024},
        {402653184, 2048},
        {402653184, 4096},
        tree_ll128,
        {0, tree_ll128.y}}},
      {Algo::NVLS_TREE, Proto::SIMPLE, {{31457281, 16}, {kTunerMaxSize, 16}, {31457281, 16}}},
      {Algo::RING,
       Proto::LL128,
       {{31457280, 17},
        {1073741824, 17},
        {2147483648, 64},
        {2147483648, 128},
        {1342177280, 160},
        {2147483648, 256},
        {1074790400, 256},
        {444596224, 160},
        {301989888, 128},
        {117440512, 64},
        {37748736, 32}}},
      {Algo::NVLS_TREE,
       Proto::SIMPLE,
       {{2147483648, 128},
        {6442450944, 128},
        {8053063680, 160},
        {9663676416, 192},
        nvlstree_1,
        nvlstree_2,
        {402653184, 4096},
        {402653184, 2048},
        {536870912, 1024},
        {335544320, 512},
        {301989888, 256},
        {310378496, 160},
        {444596224, 160},
        {1074790400, 256},
        {2684354560, 256},
        {2147483648, 224},
        {1342177280, 160}}},
      {Algo::RING,
       Proto::SIMPLE,
       {{1073741824, 17},
        {ring_simple.x, 17},
        ring_simple,
        {9663676416, 192},
        {8053063680, 160},
        {2684354560, 64},
        {1610612736, 32}}},
  };
}

// region_init_internal_p5en, ncclFuncAllReduce, nRanks == 8 * nNodes.
std::vector<Region> p5en_allreduce() {
  const TunerPoint tree_ll = aws_ofi_extend_region({196608, 192}, {196608, 1024}, kZ);
  const TunerPoint tree_ll128 = aws_ofi_extend_region({129499136, 127}, {218103808, 1024}, kZ);
  const TunerPoint nvlstree = aws_ofi_extend_region({7516192768, 256}, {17179869184, 448}, kZ);
  return {
      {Algo::TREE, Proto::LL, {{0, 16}, {196608, 16}, {196608, 1024}, tree_ll, {0, kTunerMaxRanks}}},
      {Algo::TREE,
       Proto::LL128,
       {tree_ll, {196608, 1024}, {196608, 16}, {13107200, 16}, {129499136, 127}, {218103808, 1024}, tree_ll128}},
      {Algo::RING,
       Proto::LL128,
       {{129499136, 127}, {13107200, 16}, {29884416, 16}, {293601280, 32}, {589299712, 64}, {549453824, 128}}},
      {Algo::NVLS_TREE,
       Proto::SIMPLE,
       {tree_ll128,
        {218103808, 1024},
        {129499136, 127},
        {549453824, 128},
        {589299712, 64},
        {293601280, 32},
        {29884416, 16},
        {kTunerMaxSize, 16},
        {509607936, 32},
        {7516192768, 256},
        {17179869184, 448},
        nvlstree}},
      {Algo::RING,
       Proto::SIMPLE,
       {nvlstree, {17179869184, 448}, {7516192768, 256}, {509607936, 32}, {kTunerMaxSize, 16}}},
  };
}

// set_regions: every vertex to log2 once.
std::vector<Region> in_log2(std::vector<Region> regions) {
  for (Region& r : regions)
    for (TunerPoint& v : r.vertices) v = to_log2(v);
  return regions;
}

const std::vector<Region>& regions_of(NetPlugin p) {
  static const std::vector<Region> p5 = in_log2(p5_allreduce());
  static const std::vector<Region> p5en = in_log2(p5en_allreduce());
  static const std::vector<Region> none;
  return p == NetPlugin::AWS_OFI_P5 ? p5 : p == NetPlugin::AWS_OFI_P5EN ? p5en : none;
}

}  // namespace aws_ofi_detail
using namespace aws_ofi_detail;

const AwsOfiPlatform* aws_ofi_platform(NetPlugin p) {
  switch (p) {
    case NetPlugin::NONE: return nullptr;
    case NetPlugin::AWS_OFI_P4D: return &kP4d;
    case NetPlugin::AWS_OFI_P5: return &kP5;
    case NetPlugin::AWS_OFI_P5EN: return &kP5en;
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

int aws_ofi_inside_region(TunerPoint p, const std::vector<TunerPoint>& polygon) {
  std::vector<TunerPoint> v;
  for (const TunerPoint& q : polygon) v.push_back(to_log2(q));
  return inside_log2(to_log2(p), v);
}

std::optional<RegionPick> aws_ofi_region_pick(NetPlugin p, Func func, int nranks, int nnodes, int nccl_version,
                                              double bytes, const std::function<bool(Algo, Proto)>& enabled) {
  const AwsOfiPlatform* plat = aws_ofi_platform(p);
  if (!plat || !plat->region_tuner || func != Func::ALL_REDUCE) return std::nullopt;
  // Tuner v3 (getCollInfo with the cost table) needs NCCL 2.22.3; v2 (2.21.5) picks the same way.
  if (nccl_version != 0 && nccl_version < 22105) return std::nullopt;
  // "Skip when two nodes or lesser": NCCL's own tuner; regions exist for 8 ranks per node here.
  if (nnodes <= 2 || nranks != 8 * nnodes) return std::nullopt;
  const TunerPoint pt = to_log2({bytes, static_cast<double>(nranks)});
  for (const Region& r : regions_of(p)) {
    if (!enabled(r.algo, r.proto)) continue;
    if (inside_log2(pt, r.vertices) >= 0) return RegionPick{r.algo, r.proto};
  }
  return std::nullopt;
}

}  // namespace ddpsim::collectives
