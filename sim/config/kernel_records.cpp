#include "config/kernel_records.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace ddpsim::config {

using core::Json;
using core::ObjectReader;

namespace {

std::vector<int> read_exponents(const Json* j, const std::string& path, size_t n, core::Diagnostics& d) {
  std::vector<int> out;
  if (!j) return out;
  if (!j->is_array() || j->size() != n) {
    d.add_value(path, *j, "an array of " + std::to_string(n) + " integer exponents (0, 1 or 2)");
    return out;
  }
  for (const auto& e : *j) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > 2) {
      d.add_value(path, *j, "integer exponents 0, 1 or 2");
      return {};
    }
    out.push_back(static_cast<int>(e.get<int64_t>()));
  }
  return out;
}

constexpr double kMaxDim = 2147483648.0;  // 2^31: a GEMM or convolution dimension

// A number (the value at the export size) or [c0, c1, c2] (value at size ratio r = c0 + c1 r + c2 r^2).
void read_poly(ObjectReader& r, const char* key, double (&c)[3]) {
  const Json* j = r.raw(key);
  const std::string p = r.path() + "/" + key;
  if (!j) return;
  auto fits = [](const Json& v) { return v.is_number() && std::fabs(v.get<double>()) <= core::kMaxNumber; };
  if (fits(*j)) {
    c[0] = j->get<double>();
    return;
  }
  if (j->is_array() && j->size() == 3 && fits((*j)[0]) && fits((*j)[1]) && fits((*j)[2])) {
    for (int i = 0; i < 3; ++i) c[i] = (*j)[i].get<double>();
    return;
  }
  r.diagnostics().add_value(p, *j, "a number of bytes/FLOPs or [c0, c1, c2], each of magnitude <= 1e+18");
}

}  // namespace

void read_host_ops(const Json& j, const std::string& path, LayerSpec& layer, core::Diagnostics& d) {
  if (!j.is_object()) {
    d.add_value(path, j, "an object {\"views\", \"view_nodes\", \"module_calls\"} of non-negative integers");
    return;
  }
  ObjectReader r(j, path, d);
  constexpr long long kMaxOps = 100000000;  // per layer; far beyond any model's
  const auto v = r.integer("views", false, 0, kMaxOps);
  const auto n = r.integer("view_nodes", false, 0, kMaxOps);
  const long long calls = r.integer_or("module_calls", 0, 0, kMaxOps);
  r.finish();
  // An invalid count was reported above; compare only what was read (an absent views is 0).
  const bool views_ok = v || !j.contains("views");
  const long long views = v.value_or(0), nodes = n.value_or(0);
  if (views_ok && n && nodes > views) {
    d.add_value(path + "/view_nodes", j["view_nodes"],
                "at most views (" + std::to_string(views) + "): a view node is recorded by a view op");
    return;
  }
  layer.host_views = static_cast<int>(views);
  layer.host_view_nodes = static_cast<int>(nodes);
  layer.host_module_calls = static_cast<int>(calls);
}

std::vector<KernelRecord> read_kernel_records(const Json& j, const std::string& path, core::Diagnostics& d) {
  std::vector<KernelRecord> out;
  if (!j.is_array()) {
    d.add_value(path, j, "an array of kernel records");
    return out;
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(j[i], p, d);
    KernelRecord k;
    const auto op = r.string("op", true, {"gemm", "conv", "mem"}).value_or("mem");
    auto flag = [&](const char* key) { return r.integer_or(key, 0, 0, 1) == 1; };
    if (op == "gemm") {
      k.op = KernelRecord::Op::GEMM;
      k.batch = r.number_or("b", 1, 1, false, kMaxDim);
      k.m = r.number_or("m", 1, 1, false, kMaxDim);
      k.n = r.number_or("n", 1, 1, false, kMaxDim);
      k.k = r.number_or("k", 1, 1, false, kMaxDim);
      k.grad_a = flag("ga");
      k.grad_b = flag("gb");
      k.bias = flag("bias");
      k.dtype = r.string_or("dt", "float32");
      k.batch_exp = read_exponents(r.raw("eb"), p + "/eb", 4, d);
      k.size_exp = read_exponents(r.raw("es"), p + "/es", 4, d);
    } else if (op == "conv") {
      k.op = KernelRecord::Op::CONV;
      k.n = r.number_or("n", 1, 1, false, kMaxDim);
      k.c = r.number_or("c", 1, 1, false, kMaxDim);
      k.h = r.number_or("h", 1, 1, false, kMaxDim);
      k.w = r.number_or("w", 1, 1, false, kMaxDim);
      k.o = r.number_or("o", 1, 1, false, kMaxDim);
      k.r = r.number_or("r", 1, 1, false, kMaxDim);
      k.s = r.number_or("s", 1, 1, false, kMaxDim);
      k.p = r.number_or("p", 1, 1, false, kMaxDim);
      k.q = r.number_or("q", 1, 1, false, kMaxDim);
      k.g = r.number_or("g", 1, 1, false, kMaxDim);
      k.grad_a = flag("gi");
      k.grad_b = flag("gw");
      k.bias = flag("bias");
      k.transposed = r.integer_or("transposed", 0, 0, 1) == 1;
      k.dtype = r.string_or("dt", "float32");
      k.batch_exp = read_exponents(r.raw("eb"), p + "/eb", 5, d);
      k.size_exp = read_exponents(r.raw("es"), p + "/es", 5, d);
    } else {
      k.op = KernelRecord::Op::MEM;
      k.name = r.string_or("name", "");
      read_poly(r, "in", k.in);
      read_poly(r, "out", k.out);
      read_poly(r, "f", k.flops);
      k.backward = flag("bwd");
      k.strided = flag("strided");
    }
    if (const Json* sv = r.raw("sv")) {
      k.has_saved = true;
      read_poly(r, "sv", k.saved);
      if (k.saved[0] + k.saved[1] + k.saved[2] < 0) d.add_value(p + "/sv", *sv, "saved bytes >= 0 at the export size");
    }
    r.finish();
    out.push_back(std::move(k));
  }
  return out;
}

void read_kernel_scaling(const Json& j, ModelSpec& m, core::Diagnostics& d) {
  ObjectReader r(j, "/kernel_scaling", d);
  r.string_or("method", "meta");
  m.kernel_batch_exponents = r.boolean_or("batch_exponents", false);
  m.kernel_size_kind = r.string_or("size", "", {"", "seq", "image"});
  m.kernel_export_size = static_cast<int>(r.integer_or("export", 0, 0, 1 << 24));
  r.raw("probes");
  r.finish();
}

std::string gpu_preset_for_device(const std::string& measured_on) {
  std::string n = measured_on;
  if (n.rfind("cuda: ", 0) == 0) n = n.substr(6);
  while (!n.empty() && std::isspace(static_cast<unsigned char>(n.back()))) n.pop_back();
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  // Device names as the driver reports them (nvidia-smi --query-gpu=name). Variants with the same
  // SMs, clocks and HBM bandwidth as a preset map to it (V100 SXM2 16 GB -> the 32 GB preset);
  // products with other clocks or bandwidth (H100 NVL, H200 NVL, A100 40 GB PCIe) are not listed.
  static const std::pair<const char*, const char*> kNames[] = {
      {"tesla v100-sxm2-16gb", "v100-sxm2-32gb"},
      {"tesla v100-sxm2-32gb", "v100-sxm2-32gb"},
      {"tesla v100-pcie-16gb", "v100-pcie-16gb"},
      {"tesla v100-pcie-32gb", "v100-pcie-16gb"},
      {"nvidia a100-sxm4-40gb", "a100-sxm4-40gb"},
      {"nvidia a100-sxm4-80gb", "a100-sxm4-80gb"},
      {"nvidia a100 80gb pcie", "a100-pcie-80gb"},
      {"nvidia h100 80gb hbm3", "h100-sxm"},
      {"nvidia h100 pcie", "h100-pcie"},
      {"nvidia h200", "h200"},
      {"nvidia b200", "b200"},
      {"nvidia geforce rtx 4090", "rtx-4090"},
      {"nvidia l40s", "l40s"},
  };
  for (const auto& [device, preset] : kNames)
    if (n == device) return preset;
  return "";
}

}  // namespace ddpsim::config
