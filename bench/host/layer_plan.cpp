#include "layer_plan.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ddpbench {

using ddpsim::config::LayerSpec;
using ddpsim::config::LayerType;
using ddpsim::config::ParamSpec;

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::GEMM: return "gemm";
    case OpKind::CONV_FWD: return "conv_fwd";
    case OpKind::CONV_BWD_DATA: return "conv_bwd_data";
    case OpKind::CONV_BWD_FILTER: return "conv_bwd_filter";
    case OpKind::STREAM: return "stream";
    case OpKind::ROWNORM: return "rownorm";
    case OpKind::GATHER: return "gather";
    case OpKind::SCATTER_ADD: return "scatter_add";
  }
  return "?";
}

double ConvShape::flops() const {
  return 2.0 * static_cast<double>(n * k * out_h() * out_w()) * static_cast<double>(c / groups * r * s);
}
GemmShape ConvShape::fwd_gemm() const {
  return {n * out_h() * out_w(), k / groups, c / groups * r * s, groups, false, false};
}
GemmShape ConvShape::bwd_data_gemm() const {
  return {n * out_h() * out_w(), c / groups * r * s, k / groups, groups, false, true};
}
GemmShape ConvShape::bwd_filter_gemm() const {
  return {k / groups, c / groups * r * s, n * out_h() * out_w(), groups, true, false};
}

namespace {
uint64_t u(double x) { return x > 0 ? static_cast<uint64_t>(x) : 0; }
uint64_t u(int64_t x) { return x > 0 ? static_cast<uint64_t>(x) : 0; }
}  // namespace

uint64_t Op::a_bytes(int e) const {
  switch (kind) {
    case OpKind::GEMM: return u(gemm.m * gemm.k * gemm.batch) * u(int64_t{e});
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER:
      return std::max(u(conv.n * conv.c * conv.h * conv.w), u(conv.n * conv.k * conv.out_h() * conv.out_w())) *
             u(int64_t{e});
    case OpKind::STREAM: return u(read_bytes);
    case OpKind::ROWNORM: return u(rows * cols) * u(int64_t{e});
    case OpKind::GATHER: return u(table_rows * cols) * u(int64_t{e});
    case OpKind::SCATTER_ADD: return u(rows * cols) * u(int64_t{e});
  }
  return 0;
}
uint64_t Op::b_bytes(int e) const {
  switch (kind) {
    case OpKind::GEMM: return u(gemm.k * gemm.n * gemm.batch) * u(int64_t{e});
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER: return u(conv.k * (conv.c / conv.groups) * conv.r * conv.s) * u(int64_t{e});
    case OpKind::GATHER:
    case OpKind::SCATTER_ADD: return u(rows) * 8;  // int64 indices
    default: return 0;
  }
}
uint64_t Op::c_bytes(int e) const {
  switch (kind) {
    case OpKind::GEMM: return u(gemm.m * gemm.n * gemm.batch) * u(int64_t{e});
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER: return a_bytes(e);
    case OpKind::STREAM: return u(write_bytes);
    case OpKind::ROWNORM: return u(rows * cols) * u(int64_t{e});
    case OpKind::GATHER: return u(rows * cols) * u(int64_t{e});
    case OpKind::SCATTER_ADD: return u(table_rows * cols) * u(int64_t{e});
  }
  return 0;
}

double Op::flops() const {
  switch (kind) {
    case OpKind::GEMM: return gemm.flops();
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER: return conv.flops();
    default: return 0;
  }
}

std::string Op::describe() const {
  std::ostringstream os;
  os << op_kind_name(kind);
  switch (kind) {
    case OpKind::GEMM:
      os << " m=" << gemm.m << " n=" << gemm.n << " k=" << gemm.k << " batch=" << gemm.batch
         << (gemm.trans_a ? " A^T" : "") << (gemm.trans_b ? " B^T" : "");
      break;
    case OpKind::CONV_FWD:
    case OpKind::CONV_BWD_DATA:
    case OpKind::CONV_BWD_FILTER:
      os << " in=" << conv.n << "x" << conv.c << "x" << conv.h << "x" << conv.w << " filter=" << conv.k << "x"
         << conv.c / conv.groups << "x" << conv.r << "x" << conv.s << " stride=" << conv.stride << " pad=" << conv.pad
         << " groups=" << conv.groups;
      break;
    case OpKind::STREAM: os << " read=" << read_bytes << "B write=" << write_bytes << "B"; break;
    case OpKind::ROWNORM: os << " rows=" << rows << " cols=" << cols; break;
    case OpKind::GATHER:
    case OpKind::SCATTER_ADD: os << " tokens=" << rows << " dim=" << cols << " table=" << table_rows; break;
  }
  return os.str();
}

std::pair<double, double> roots_from_sum_product(double s, double p) {
  const double disc = s * s - 4 * p;
  if (s <= 0 || p <= 0 || disc < 0) return {0, 0};
  const double r = std::sqrt(disc);
  return {(s + r) / 2, (s - r) / 2};
}

namespace {

int64_t round_pos(double x) { return std::max<int64_t>(1, static_cast<int64_t>(std::llround(x))); }

Op stream_op(double read, double write) {
  Op o;
  o.kind = OpKind::STREAM;
  o.read_bytes = read;
  o.write_bytes = write;
  return o;
}

Op gemm_op(GemmShape g) {
  Op o;
  o.kind = OpKind::GEMM;
  o.gemm = g;
  return o;
}

// Adds a streaming kernel for the bytes the main operations do not move, when they matter.
void add_rest(std::vector<Op>& ops, double total, double covered, double read_share) {
  const double rest = total - covered;
  if (rest > std::max(4096.0, 0.02 * total)) ops.push_back(stream_op(rest * read_share, rest * (1 - read_share)));
}

// A GEMM with `flops` and no shape information: m = n = k.
GemmShape cube_gemm(double flops) {
  const int64_t d = round_pos(std::cbrt(std::max(flops, 2.0) / 2));
  return {d, d, d, 1, false, false};
}

const ParamSpec* param_of_rank(const Model& m, const LayerSpec& l, size_t rank) {
  for (int idx : l.params) {
    const auto& p = m.spec.params[static_cast<size_t>(idx)];
    if (p.shape.size() == rank) return &p;
  }
  return nullptr;
}

void plan_linear(const Model& m, const LayerSpec& l, const PlanOptions& o, double scale, int e, int64_t seq,
                 LayerPlan& p) {
  const double f = l.fwd_flops * scale, bf = l.bwd_flops * scale;
  const double fb = p.fwd_bytes, bb = p.bwd_bytes;
  const ParamSpec* w = param_of_rank(m, l, 2);
  const bool bias = param_of_rank(m, l, 1) != nullptr;
  int64_t rows = 0, in = 0, out = 0;
  bool weight_grad = true;
  if (w) {
    out = w->shape[0];
    in = w->shape[1];
    weight_grad = w->requires_grad;
    rows = round_pos(f / (2.0 * static_cast<double>(in * out) + (bias ? static_cast<double>(out) : 0.0)));
    p.note = "GEMM shape from the weight [" + std::to_string(out) + ", " + std::to_string(in) + "] and fwd_flops";
  } else {
    // No own 2-D weight (e.g. GPT-2's lm_head, tied to the embedding): tokens x (n, k) from the
    // FLOPs (2 T n k) and the activation bytes (T (n + k) elements).
    const double elems = l.fwd_bytes * scale / 4.0;
    const double tokens =
        seq > 0 ? static_cast<double>((o.batch > 0 ? o.batch : int64_t{m.spec.batch_size}) * seq) : 0.0;
    auto [a, b] =
        tokens > 0 ? roots_from_sum_product(elems / tokens, f / (2 * tokens)) : std::pair<double, double>{0, 0};
    if (a >= 1 && b >= 1) {
      rows = round_pos(tokens);
      out = round_pos(a);
      in = round_pos(b);
      p.note = "no own weight: tokens = batch x seq, n and k from fwd_flops and fwd_bytes";
    } else {
      const GemmShape g = cube_gemm(f);
      rows = g.m;
      in = g.k;
      out = g.n;
      p.note = "no own weight and no token count: square GEMM of equal FLOPs";
    }
  }
  // Forward Y[rows,out] = X W^T (column-major: C[out,rows] = W^T-op x X).
  p.fwd.push_back(gemm_op({out, rows, in, 1, true, false}));
  add_rest(p.fwd, fb, static_cast<double>(rows * (in + out)) * e, 0.5);
  const double gemm = 2.0 * static_cast<double>(rows * in * out);
  const int64_t nb =
      std::clamp<int64_t>(std::llround((bf - (bias ? static_cast<double>(rows * out) : 0.0)) / gemm), 0, 2);
  double covered = 0;
  const bool do_dw = nb == 2 || (nb == 1 && weight_grad);
  const bool do_dx = nb == 2 || (nb == 1 && !weight_grad);
  if (do_dw) {  // dW[out,in] = dY^T X
    p.bwd.push_back(gemm_op({in, out, rows, 1, false, true}));
    covered += static_cast<double>(rows * (out + in)) * e;
  }
  if (do_dx) {  // dX[rows,in] = dY W
    p.bwd.push_back(gemm_op({in, rows, out, 1, false, false}));
    covered += static_cast<double>(rows * (out + in)) * e;
  }
  add_rest(p.bwd, bb, covered, 2.0 / 3.0);
}

void plan_matmul(const LayerSpec& l, double scale, int e, int64_t seq, int64_t head_dim, LayerPlan& p) {
  const double f = l.fwd_flops * scale, bf = l.bwd_flops * scale;
  const double s = static_cast<double>(seq), d = static_cast<double>(head_dim);
  const double bh = seq > 0 ? f / (4 * d * s * s) : 0;
  if (bh >= 0.5) {
    const int64_t nbh = round_pos(bh);
    // scores = Q K^T, then context = P V, per (batch x head).
    p.fwd.push_back(gemm_op({seq, seq, head_dim, nbh, true, false}));
    p.fwd.push_back(gemm_op({head_dim, seq, seq, nbh, false, false}));
    const double nbhd = static_cast<double>(nbh);
    add_rest(p.fwd, p.fwd_bytes, nbhd * (4 * s * d + 2 * s * s) * e, 0.5);
    const double one = 2 * nbhd * s * s * d;
    const int64_t nb = std::clamp<int64_t>(std::llround(bf / one), 0, 4);
    for (int64_t i = 0; i < nb; ++i)
      p.bwd.push_back(i % 2 == 0 ? gemm_op({seq, seq, head_dim, nbh, false, true})
                                 : gemm_op({head_dim, seq, seq, nbh, false, true}));
    add_rest(p.bwd, p.bwd_bytes, static_cast<double>(nb) * nbhd * (s * s + 2 * s * d) * e, 2.0 / 3.0);
    p.note = "attention-like: batched GEMMs seq=" + std::to_string(seq) + " head_dim=" + std::to_string(head_dim) +
             ", batch x heads = fwd_flops / (4 seq^2 head_dim); the rest of the bytes as a streaming kernel";
  } else {
    p.fwd.push_back(gemm_op(cube_gemm(f)));
    if (bf > 0) p.bwd.push_back(gemm_op(cube_gemm(bf)));
    p.note = "matmul without a sequence length (--seq-len): square GEMMs of equal FLOPs";
  }
}

void plan_conv(const Model& m, const LayerSpec& l, const PlanOptions& o, double scale, int e, int64_t batch,
               LayerPlan& p) {
  const double f = l.fwd_flops * scale, bf = l.bwd_flops * scale;
  const ParamSpec* w = param_of_rank(m, l, 4);
  if (!w || w->shape[0] < 1 || w->shape[1] < 1) {
    p.fwd.push_back(gemm_op(cube_gemm(f)));
    if (bf > 0) p.bwd.push_back(gemm_op(cube_gemm(bf)));
    p.note = "conv2d without a 4-D weight: square GEMMs of equal FLOPs";
    return;
  }
  ConvShape c;
  c.k = w->shape[0];
  const int64_t cin_g = w->shape[1];
  c.r = w->shape[2];
  c.s = w->shape[3];
  c.groups = (cin_g == 1 && c.k > 1) ? c.k : 1;  // a 1-channel filter bank: depthwise (assumed)
  c.c = cin_g * c.groups;
  c.n = batch;
  const bool bias = param_of_rank(m, l, 1) != nullptr;
  const double per_out = 2.0 * static_cast<double>(cin_g * c.r * c.s) + (bias ? 1.0 : 0.0);
  const double out_hw = f / per_out / static_cast<double>(c.k * batch);
  const double in_elems = l.fwd_bytes * scale / 4.0 - static_cast<double>(c.k * batch) * out_hw;
  const double in_hw = in_elems / static_cast<double>(c.c * batch);
  const int64_t ho = round_pos(std::sqrt(std::max(out_hw, 1.0)));
  const int64_t hi = in_hw >= 1 ? round_pos(std::sqrt(in_hw)) : ho;
  c.stride = std::max<int64_t>(1, std::llround(static_cast<double>(hi) / static_cast<double>(ho)));
  c.pad = std::max<int64_t>(0, ((ho - 1) * c.stride + c.r - hi + 1) / 2);
  c.h = c.w = hi;
  if (c.out_h() < 1) c.h = c.w = c.r;  // degenerate counts: keep a valid shape
  p.note = "conv from weight [" + std::to_string(c.k) + ", " + std::to_string(cin_g) + ", " + std::to_string(c.r) +
           ", " + std::to_string(c.s) + "]: input " + std::to_string(c.h) + "x" + std::to_string(c.w) + " stride " +
           std::to_string(c.stride) + " pad " + std::to_string(c.pad) + (c.groups > 1 ? " depthwise" : "") +
           (o.use_cudnn ? " (cuDNN)" : " (implicit GEMM)");
  const double in_b = static_cast<double>(c.n * c.c * c.h * c.w) * e;
  const double out_b = static_cast<double>(c.n * c.k * c.out_h() * c.out_w()) * e;
  auto conv_or_gemm = [&](OpKind k) {
    if (o.use_cudnn) {
      Op op;
      op.kind = k;
      op.conv = c;
      return op;
    }
    return gemm_op(k == OpKind::CONV_FWD        ? c.fwd_gemm()
                   : k == OpKind::CONV_BWD_DATA ? c.bwd_data_gemm()
                                                : c.bwd_filter_gemm());
  };
  p.fwd.push_back(conv_or_gemm(OpKind::CONV_FWD));
  add_rest(p.fwd, p.fwd_bytes, in_b + out_b, 0.5);
  const double one = c.flops();
  const int64_t nb = std::clamp<int64_t>(one > 0 ? std::llround(bf / one) : 0, 0, 2);
  if (nb == 2) p.bwd.push_back(conv_or_gemm(OpKind::CONV_BWD_DATA));
  if (nb >= 1)
    p.bwd.push_back(conv_or_gemm(w->requires_grad || nb == 2 ? OpKind::CONV_BWD_FILTER : OpKind::CONV_BWD_DATA));
  add_rest(p.bwd, p.bwd_bytes, static_cast<double>(nb) * (in_b + out_b), 2.0 / 3.0);
}

void plan_rownorm(std::vector<Op>& ops, double bytes, int64_t cols, int e, double read_share) {
  // One pass: read a row, write a row; more bytes than that go to a streaming kernel.
  const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(bytes / 2 / static_cast<double>(cols * e)));
  Op op;
  op.kind = OpKind::ROWNORM;
  op.rows = rows;
  op.cols = cols;
  ops.push_back(op);
  add_rest(ops, bytes, 2.0 * static_cast<double>(rows * cols * e), read_share);
}

void plan_embedding(const Model& m, const LayerSpec& l, double scale, int e, LayerPlan& p) {
  const ParamSpec* w = param_of_rank(m, l, 2);
  if (!w) {
    if (p.fwd_bytes > 0) p.fwd.push_back(stream_op(p.fwd_bytes / 2, p.fwd_bytes / 2));
    if (p.bwd_bytes > 0) p.bwd.push_back(stream_op(p.bwd_bytes * 2 / 3, p.bwd_bytes / 3));
    p.note = "embedding without a 2-D weight: streaming kernels";
    return;
  }
  Op op;
  op.kind = OpKind::GATHER;
  op.table_rows = w->shape[0];
  op.cols = w->shape[1];
  // Forward bytes = tokens x (8 B index + dim x 4 B row written), at export precision.
  op.rows = static_cast<int64_t>(std::llround(l.fwd_bytes * scale / (8.0 + 4.0 * static_cast<double>(op.cols))));
  (void)e;
  if (op.rows >= 1) p.fwd.push_back(op);
  if (op.rows >= 1 && w->requires_grad && (l.bwd_bytes > 0 || l.bwd_flops > 0)) {
    op.kind = OpKind::SCATTER_ADD;
    p.bwd.push_back(op);
  }
  p.note = "gather of " + std::to_string(op.rows) + " rows of a " + std::to_string(op.table_rows) + " x " +
           std::to_string(op.cols) + " table; backward zeroes the weight gradient and scatter-adds";
}

}  // namespace

LayerPlan plan_layer(const Model& m, size_t index, const PlanOptions& o) {
  const LayerSpec& l = m.spec.layers.at(index);
  const int64_t batch = o.batch > 0 ? o.batch : int64_t{m.spec.batch_size};
  const double scale = static_cast<double>(batch) / static_cast<double>(m.spec.batch_size);
  const int e = dtype_size(o.dtype);
  const double byte_scale = scale * e / 4.0;  // counts are at float32 activations
  const int64_t seq = o.seq_len > 0 ? o.seq_len : m.token_seq_len();
  LayerPlan p;
  p.name = l.name;
  p.type = ddpsim::config::to_string(l.type);
  p.fwd_flops = l.fwd_flops * scale;
  p.bwd_flops = l.bwd_flops * scale;
  p.fwd_bytes = l.fwd_bytes * byte_scale;
  p.bwd_bytes = l.bwd_bytes * byte_scale;
  if (p.fwd_flops == 0 && p.fwd_bytes == 0 && p.bwd_flops == 0 && p.bwd_bytes == 0) {
    p.note = "no work recorded: nothing launched";
    return p;
  }
  if (l.type == LayerType::LINEAR) {
    plan_linear(m, l, o, scale, e, seq, p);
  } else if (l.type == LayerType::MATMUL) {
    plan_matmul(l, scale, e, seq, o.head_dim, p);
  } else if (l.type == LayerType::CONV2D) {
    plan_conv(m, l, o, scale, e, batch, p);
  } else if (l.type == LayerType::LAYERNORM || l.type == LayerType::SOFTMAX) {
    const ParamSpec* g = param_of_rank(m, l, 1);
    const int64_t cols = g ? std::max<int64_t>(1, g->shape[0]) : (seq > 0 ? seq : 1024);
    if (p.fwd_bytes > 0) plan_rownorm(p.fwd, p.fwd_bytes, cols, e, 0.5);
    if (p.bwd_bytes > 0) plan_rownorm(p.bwd, p.bwd_bytes, cols, e, 2.0 / 3.0);
    p.note = "row-wise normalisation kernel, row length " + std::to_string(cols);
  } else if (l.type == LayerType::EMBEDDING) {
    plan_embedding(m, l, scale, e, p);
  } else {
    // batchnorm, elementwise, pool, other: bandwidth-bound; forward reads as much as it writes,
    // backward reads grad_out and what was saved and writes grad_in (2:1).
    if (p.fwd_bytes > 0) p.fwd.push_back(stream_op(p.fwd_bytes / 2, p.fwd_bytes / 2));
    if (p.bwd_bytes > 0) p.bwd.push_back(stream_op(p.bwd_bytes * 2 / 3, p.bwd_bytes / 3));
    p.note = "streaming kernel moving fwd_bytes/bwd_bytes";
  }
  return p;
}

std::vector<LayerPlan> plan_model(const Model& m, const PlanOptions& o) {
  std::vector<LayerPlan> out;
  for (size_t i = 0; i < m.spec.layers.size(); ++i) out.push_back(plan_layer(m, i, o));
  return out;
}

std::vector<LayerPlan> contention_plans(DType dtype) {
  const int e = dtype_size(dtype);
  std::vector<LayerPlan> v;
  auto add = [&](const std::string& name, const std::string& note, std::vector<Op> ops) {
    LayerPlan p;
    p.name = name;
    p.type = name;
    p.note = note;
    p.fwd = std::move(ops);
    for (const auto& op : p.fwd) p.fwd_flops += op.flops();
    v.push_back(std::move(p));
  };
  add("gemm", "GEMM 8192 x 8192 x 8192", {gemm_op({8192, 8192, 8192, 1, false, false})});
  add("conv_gemm", "implicit-GEMM shape of a ResNet 3x3 conv (batch 64, 56x56, 64->256 ch)",
      {gemm_op({64 * 56 * 56, 256, 64 * 9, 1, false, false})});
  add("attention", "batched GEMMs: 256 (batch x heads) x seq 2048 x head_dim 128, QK^T then PV",
      {gemm_op({2048, 2048, 128, 256, true, false}), gemm_op({128, 2048, 2048, 256, false, false})});
  add("elementwise", "streaming kernel reading 512 MiB and writing 512 MiB",
      {stream_op(512.0 * (1 << 20), 512.0 * (1 << 20))});
  Op norm;
  norm.kind = OpKind::ROWNORM;
  norm.cols = 4096;
  norm.rows = (512LL << 20) / (4096LL * e);
  add("normalisation", "row normalisation over 512 MiB, rows of 4096", {norm});
  return v;
}

}  // namespace ddpbench
