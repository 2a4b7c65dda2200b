#include "validate/results_reader.hpp"

#include <cmath>

namespace ddpsim::validate {

using core::Json;

namespace {

class ResultsChecker {
 public:
  explicit ResultsChecker(const std::string& file) : d_(file) {}
  enum class T { NUMBER, INTEGER, STRING, BOOLEAN, OBJECT, ARRAY, NUMBER_OR_NULL, OBJECT_OR_STRING };
  // nullptr when absent or of the wrong type (the problem is recorded).
  const Json* field(const Json& parent, const std::string& key, const std::string& path, T type, bool required,
                    double lo = -1e18, double hi = 1e18) {
    const std::string p = core::join_path(path, key);
    if (!parent.is_object()) return nullptr;
    auto it = parent.find(key);
    if (it == parent.end()) {
      if (required) d_.add(p, "missing; a ddpbench-results/1 file needs it (" + what(type, lo, hi) + ")");
      return nullptr;
    }
    const Json& v = *it;
    bool ok = false;
    switch (type) {
      case T::NUMBER: ok = v.is_number(); break;
      case T::INTEGER: ok = v.is_number_integer(); break;
      case T::STRING: ok = v.is_string(); break;
      case T::BOOLEAN: ok = v.is_boolean(); break;
      case T::OBJECT: ok = v.is_object(); break;
      case T::ARRAY: ok = v.is_array(); break;
      case T::NUMBER_OR_NULL: ok = v.is_number() || v.is_null(); break;
      case T::OBJECT_OR_STRING: ok = v.is_object() || v.is_string(); break;
    }
    if (ok && v.is_number()) {
      const double x = v.get<double>();
      ok = std::isfinite(x) && x >= lo && x <= hi;
    }
    if (!ok) {
      d_.add_value(p, v, what(type, lo, hi));
      return nullptr;
    }
    return &v;
  }
  void check(const Json& doc) {
    if (!doc.is_object()) {  // nothing below can be read from it
      d_.add_value("", doc, "an object (a ddpbench-results/1 document)");
      d_.throw_if_any();
    }
    field(doc, "format", "", T::STRING, true);
    field(doc, "mode", "", T::STRING, true);
    field(doc, "torch_version", "", T::STRING, false);
    if (const Json* cfg = field(doc, "config", "", T::OBJECT, false)) {
      field(*cfg, "zero_grad_set_to_none", "/config", T::BOOLEAN, false);
      field(*cfg, "gradient_as_bucket_view", "/config", T::BOOLEAN, false);
      field(*cfg, "comm_hook", "/config", T::STRING, false);
    }
    bool cpu = false;
    int ranks = 0;
    if (const Json* hw = field(doc, "hardware", "", T::OBJECT, true)) {
      if (hw->contains("ngpus") && (*hw)["ngpus"].is_number_integer()) ranks = (*hw)["ngpus"].get<int>();
      if (const Json* dev = field(*hw, "device", "/hardware", T::STRING, false)) cpu = *dev == "cpu";
      field(*hw, "ngpus", "/hardware", T::INTEGER, true, 1, 1 << 20);
      field(*hw, "nnodes", "/hardware", T::INTEGER, false, 1, 1 << 20);
      field(*hw, "threads_per_rank", "/hardware", T::NUMBER, false, 0, 1 << 20);
      field(*hw, "logical_cpus", "/hardware", T::NUMBER, false, 0, 1 << 24);
      for (const char* k : {"gpu_name", "cpu_name", "torch_version"}) field(*hw, k, "/hardware", T::STRING, false);
      if (const Json* nv = field(*hw, "nvlink", "/hardware", T::OBJECT, false))
        field(*nv, "all_pairs_peer_capable", "/hardware/nvlink", T::BOOLEAN, false);
    }
    if (cpu) {
      if (const Json* cal = field(doc, "calibration", "", T::OBJECT, true)) {
        field(*cal, "copy_bandwidth_Bps", "/calibration", T::NUMBER, true, 1, 1e15);
        field(*cal, "op_overhead_s", "/calibration", T::NUMBER, true, 0, 1e3);
        if (const Json* fit = field(*cal, "ring_fit", "/calibration", T::OBJECT, true)) {
          // One rank fits no bandwidth (nothing crosses a link): null there.
          if (!(ranks == 1 && fit->contains("bandwidth_Bps") && (*fit)["bandwidth_Bps"].is_null()))
            field(*fit, "bandwidth_Bps", "/calibration/ring_fit", T::NUMBER, true, 1, 1e15);
          field(*fit, "step_latency_s", "/calibration/ring_fit", T::NUMBER, true, 0, 1e3);
          field(*fit, "base_latency_s", "/calibration/ring_fit", T::NUMBER, true, 0, 1e3);
        }
      }
    }
    const Json* mode = doc.is_object() && doc.contains("mode") ? &doc["mode"] : nullptr;
    if (mode && *mode == "step") {
      if (const Json* step = field(doc, "step", "", T::OBJECT, true)) {
        if (const Json* model = field(*step, "model", "/step", T::OBJECT_OR_STRING, true); model && model->is_object())
          for (const char* k : {"measured_batch_size", "batch_size"})
            field(*model, k, "/step/model", T::INTEGER, false, 1, 1 << 24);
        if (const Json* cases = field(*step, "cases", "/step", T::ARRAY, true)) {
          for (size_t i = 0; i < cases->size(); ++i) {
            const std::string p = "/step/cases/" + std::to_string(i);
            const Json& c = (*cases)[i];
            if (!c.is_object()) {
              d_.add_value(p, c, "an object");
              continue;
            }
            field(c, "bucket_cap_is_default", p, T::BOOLEAN, false);
            field(c, "bucket_cap_mb", p, T::NUMBER, false, 0, 1e9);
            field(c, "step_time_s", p, T::NUMBER, true, 1e-12, 1e6);
            field(c, "exposed_comm_s", p, T::NUMBER, false, -1e6, 1e6);
            field(c, "overlap_ratio", p, T::NUMBER_OR_NULL, false, -1e6, 1e6);
            field(c, "compute_only_s", p, T::NUMBER, false, 0, 1e6);
            field(c, "compute_only_backward_end_s", p, T::NUMBER, false, 0, 1e6);
            field(c, "compute_only_optimizer_s", p, T::NUMBER, false, 1e-12, 1e6);
            // Every timed step (validate's median intervals and slow-phase check read them).
            for (const char* k : {"step_times_s", "compute_only_times_s", "no_ddp_step_times_s"})
              if (const Json* ts = field(c, k, p, T::ARRAY, false))
                for (size_t j = 0; j < ts->size(); ++j) {
                  const Json& t = (*ts)[j];
                  if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 1e-12 ||
                      t.get<double>() > 1e6)
                    d_.add_value(p + "/" + k + "/" + std::to_string(j), t, what(T::NUMBER, 1e-12, 1e6));
                }
            if (const Json* bs = field(c, "buckets", p, T::ARRAY, false))
              for (size_t b = 0; b < bs->size(); ++b) {
                const std::string bp = p + "/buckets/" + std::to_string(b);
                if (!(*bs)[b].is_object()) {
                  d_.add_value(bp, (*bs)[b], "an object");
                  continue;
                }
                field((*bs)[b], "end_s", bp, T::NUMBER, false, -1e6, 1e6);
                field((*bs)[b], "bytes", bp, T::NUMBER, false, 0, 1e18);
              }
          }
        }
      }
    } else if (mode && *mode == "allreduce") {
      if (const Json* rows = field(doc, "allreduce", "", T::ARRAY, true))
        for (size_t i = 0; i < rows->size(); ++i) {
          const std::string p = "/allreduce/" + std::to_string(i);
          const Json& r = (*rows)[i];
          if (!r.is_object()) {
            d_.add_value(p, r, "an object");
            continue;
          }
          field(r, "size_bytes", p, T::NUMBER, false, 0, 1e18);
          const Json* oop = field(r, "out_of_place", p, T::OBJECT, false);
          const Json& times = oop ? *oop : r;
          const std::string tp = oop ? p + "/out_of_place" : p;
          field(times, "time_s", tp, T::NUMBER, false, 0, 1e6);
          field(times, "time_us", tp, T::NUMBER, false, 0, 1e12);
        }
    }
    d_.throw_if_any();
  }

 private:
  static std::string what(T type, double lo, double hi) {
    auto range = [&] { return " in [" + core::short_dump(lo) + ", " + core::short_dump(hi) + "]"; };
    switch (type) {
      case T::NUMBER: return "a number" + range();
      case T::INTEGER: return "an integer" + range();
      case T::STRING: return "a string";
      case T::BOOLEAN: return "true or false";
      case T::OBJECT: return "an object";
      case T::ARRAY: return "an array";
      case T::NUMBER_OR_NULL: return "a number" + range() + " or null";
      case T::OBJECT_OR_STRING: return "a model object or a bundled model name";
    }
    return "";
  }
  core::Diagnostics d_;
};

}  // namespace

void check_results(const Json& doc, const std::string& file) { ResultsChecker(file).check(doc); }

}  // namespace ddpsim::validate
