#include "args.hpp"

#include <cmath>
#include <functional>
#include <sstream>

#include "config/specs.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "errors.hpp"

namespace ddpbench {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::FLOAT32: return "float32";
    case DType::FLOAT16: return "float16";
    case DType::BFLOAT16: return "bfloat16";
  }
  return "?";
}

int dtype_size(DType d) { return ddpsim::config::dtype_size(*ddpsim::config::parse_dtype(dtype_name(d))); }

namespace {

const char* const kCommands = "allreduce, layers, contention, step";

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// A flag table: each flag has names, a value description for messages, and a setter that throws
// ArgError with the flag's name on a bad value. Boolean flags take no value.
class FlagParser {
 public:
  explicit FlagParser(std::string command) : command_(std::move(command)) {}

  void add(std::vector<std::string> names, std::string what, std::function<void(const std::string&)> set) {
    flags_.push_back({std::move(names), std::move(what), std::move(set), false});
  }
  void add_bool(std::vector<std::string> names, bool& target) {
    flags_.push_back({std::move(names), "", [&target](const std::string&) { target = true; }, true});
  }
  void add_int(std::vector<std::string> names, int& target, int min_value) {
    auto label = names.front();
    add(names, "an integer >= " + std::to_string(min_value), [&target, min_value, label](const std::string& v) {
      target = static_cast<int>(to_int(label, v, min_value, "an integer >= " + std::to_string(min_value)));
    });
  }
  void add_int64(std::vector<std::string> names, int64_t& target, int64_t min_value) {
    auto label = names.front();
    add(names, "an integer >= " + std::to_string(min_value), [&target, min_value, label](const std::string& v) {
      target = to_int(label, v, min_value, "an integer >= " + std::to_string(min_value));
    });
  }
  void add_choice(std::vector<std::string> names, std::string& target, std::vector<std::string> allowed) {
    auto label = names.front();
    add(names, "one of " + join(allowed), [&target, allowed, label](const std::string& v) {
      for (const auto& a : allowed)
        if (a == v) {
          target = v;
          return;
        }
      throw ArgError(label + ": '" + v + "' is not one of " + join(allowed));
    });
  }
  void add_dtype(std::vector<std::string> names, DType& target) {
    auto label = names.front();
    add(names, "one of float32, float16, bfloat16", [&target, label](const std::string& v) {
      if (v == "float32")
        target = DType::FLOAT32;
      else if (v == "float16")
        target = DType::FLOAT16;
      else if (v == "bfloat16")
        target = DType::BFLOAT16;
      else
        throw ArgError(label + ": '" + v + "' is not one of float32, float16, bfloat16");
    });
  }
  void add_string(std::vector<std::string> names, std::string& target, std::string what) {
    auto label = names.front();
    add(names, what, [&target, label, what](const std::string& v) {
      if (v.empty()) throw ArgError(label + ": empty value (expected " + what + ")");
      target = v;
    });
  }

  // Returns true when help was requested.
  bool parse(const std::vector<std::string>& args, size_t first) {
    for (size_t i = first; i < args.size(); ++i) {
      std::string a = args[i];
      if (a == "-h" || a == "--help") return true;
      std::string value;
      bool has_inline = false;
      if (a.rfind("--", 0) == 0) {
        auto eq = a.find('=');
        if (eq != std::string::npos) {
          value = a.substr(eq + 1);
          a = a.substr(0, eq);
          has_inline = true;
        }
      }
      const Flag* f = find(a);
      if (!f) {
        throw ArgError("ddpbench " + command_ + ": unknown flag '" + a + "' (allowed: " + allowed_list() + ")");
      }
      if (f->is_bool) {
        if (has_inline) throw ArgError(a + ": takes no value");
        f->set("");
        continue;
      }
      if (!has_inline) {
        if (i + 1 >= args.size()) throw ArgError(a + ": missing value (expected " + f->what + ")");
        value = args[++i];
      }
      f->set(value);
    }
    return false;
  }

  std::string help() const {
    std::ostringstream os;
    for (const auto& f : flags_) os << "  " << join(f.names, ", ") << (f.is_bool ? "" : "  <" + f.what + ">") << "\n";
    return os.str();
  }

  static int64_t to_int(const std::string& flag, const std::string& v, int64_t min_value, const std::string& what) {
    size_t pos = 0;
    long long x = 0;
    try {
      x = std::stoll(v, &pos);
    } catch (const std::exception&) {
      throw ArgError(flag + ": '" + v + "' is not " + what);
    }
    if (pos != v.size() || x < min_value) throw ArgError(flag + ": '" + v + "' is not " + what);
    return x;
  }

 private:
  struct Flag {
    std::vector<std::string> names;
    std::string what;
    std::function<void(const std::string&)> set;
    bool is_bool;
  };
  const Flag* find(const std::string& name) const {
    for (const auto& f : flags_)
      for (const auto& n : f.names)
        if (n == name) return &f;
    return nullptr;
  }
  std::string allowed_list() const {
    std::vector<std::string> all;
    for (const auto& f : flags_) all.push_back(join(f.names, "/"));
    all.push_back("-h/--help");
    return join(all);
  }
  std::string command_;
  std::vector<Flag> flags_;
};

double to_double(const std::string& flag, const std::string& v, const std::string& what) {
  size_t pos = 0;
  double x = 0;
  try {
    x = std::stod(v, &pos);
  } catch (const std::exception&) {
    throw ArgError(flag + ": '" + v + "' is not " + what);
  }
  if (pos != v.size() || !std::isfinite(x)) throw ArgError(flag + ": '" + v + "' is not " + what);
  return x;
}

void add_timing(FlagParser& p, TimingArgs& t) {
  p.add_int({"-n", "--iters"}, t.iters, 1);
  p.add_int({"-w", "--warmup"}, t.warmup, 0);
  p.add_string({"--json"}, t.json_path, "a file path");
}

void add_model(FlagParser& p, ModelArgs& m) {
  p.add_string({"--model"}, m.model_path, "a ddpsim-model/1 JSON file");
  p.add_string({"--synthetic"}, m.synthetic, "mlp:LAYERS:HIDDEN");
  p.add_int64({"--batch"}, m.batch, 1);
  p.add_dtype({"--dtype"}, m.dtype);
  p.add_choice({"--conv"}, m.conv, {"auto", "cudnn", "gemm"});
  p.add_bool({"--tf32"}, m.tf32);
  p.add_int64({"--seq-len"}, m.seq_len, 1);
  p.add_int64({"--head-dim"}, m.head_dim, 1);
}

void check_model_source(const ModelArgs& m) {
  if (m.model_path.empty() == m.synthetic.empty())
    throw ArgError("--model/--synthetic: exactly one is required (--model FILE.json or --synthetic mlp:LAYERS:HIDDEN)");
}

std::vector<CapSpec> parse_caps(const std::string& v) {
  std::vector<CapSpec> caps;
  for (const auto& item : ddpsim::core::split_list(v)) {
    if (item == "default") {
      caps.push_back({ddpsim::config::DdpSettings{}.bucket_cap_mb, true});
      continue;
    }
    const std::string what = "a comma-separated list of bucket_cap_mb values > 0 or 'default'";
    double x = 0;
    try {
      x = to_double("--caps", item, what);
    } catch (const ArgError&) {
      throw ArgError("--caps: '" + item + "' in '" + v + "' is not a number > 0 or 'default'");
    }
    if (x <= 0) throw ArgError("--caps: '" + item + "' in '" + v + "' is not a number > 0 or 'default'");
    caps.push_back({x, false});
  }
  if (caps.empty()) throw ArgError("--caps: '" + v + "' is empty (expected e.g. 1,5,25,100 or default)");
  return caps;
}

nlohmann::json timing_json(const TimingArgs& t) {
  return {{"iters", t.iters}, {"warmup", t.warmup}, {"json", t.json_path}};
}

nlohmann::json model_json(const ModelArgs& m) {
  return {{"model", m.model_path}, {"synthetic", m.synthetic}, {"batch", m.batch},     {"dtype", dtype_name(m.dtype)},
          {"conv", m.conv},        {"tf32", m.tf32},           {"seq_len", m.seq_len}, {"head_dim", m.head_dim}};
}

std::string overview() {
  return "usage: ddpbench <command> [flags]   (ddpbench <command> --help for its flags)\n"
         "commands:\n"
         "  allreduce   nccl-tests-style ncclAllReduce size sweep\n"
         "  layers      forward/backward time of each layer of a ddpsim-model/1 file\n"
         "  contention  compute kernels alone vs beside an all-reduce (or a copy kernel)\n"
         "  step        synthetic DDP step with PyTorch's bucket plan, swept over bucket caps\n";
}

// Builds the flag table of one command over `c` (used both to parse and to print help).
FlagParser make_parser(const std::string& name, Command& c) {
  FlagParser p(name);
  if (name == "allreduce") {
    auto& a = c.emplace<AllreduceArgs>();
    p.add_int({"-g", "--ngpus"}, a.ngpus, 0);
    p.add({"-b", "--minbytes"}, "a size like 8, 64K, 1M, 8G",
          [&a](const std::string& v) { a.min_bytes = parse_size("-b", v); });
    p.add({"-e", "--maxbytes"}, "a size like 8, 64K, 1M, 8G",
          [&a](const std::string& v) { a.max_bytes = parse_size("-e", v); });
    p.add({"-f", "--stepfactor"}, "a number > 1", [&a](const std::string& v) {
      a.step_factor = to_double("-f", v, "a number > 1");
      if (a.step_factor <= 1.0) throw ArgError("-f: '" + v + "' is not a number > 1");
    });
    p.add({"-c", "--check"}, "0 or 1", [&a](const std::string& v) {
      if (v != "0" && v != "1") throw ArgError("-c: '" + v + "' is not one of 0, 1");
      a.check = v == "1";
    });
    add_timing(p, a.timing);
  } else if (name == "layers") {
    auto& a = c.emplace<LayersArgs>();
    add_model(p, a.model);
    p.add_int({"-d", "--device"}, a.device, 0);
    add_timing(p, a.timing);
  } else if (name == "contention") {
    auto& a = c.emplace<ContentionArgs>();
    p.add_int({"-g", "--ngpus"}, a.ngpus, 0);
    p.add_dtype({"--dtype"}, a.dtype);
    p.add({"--bytes"}, "a size like 64M, 1G", [&a](const std::string& v) { a.bytes = parse_size("--bytes", v); });
    p.add_int({"--hog-blocks"}, a.hog_blocks, 1);
    add_timing(p, a.timing);
  } else if (name == "step") {
    auto& a = c.emplace<StepArgs>();
    add_model(p, a.model);
    p.add_int({"-g", "--ngpus"}, a.ngpus, 0);
    p.add({"--caps"}, "a comma-separated list of bucket_cap_mb values > 0 or 'default'",
          [&a](const std::string& v) { a.caps = parse_caps(v); });
    p.add({"--first-bucket-mb"}, "a number > 0", [&a](const std::string& v) {
      a.first_bucket_mb = to_double("--first-bucket-mb", v, "a number > 0");
      if (a.first_bucket_mb <= 0) throw ArgError("--first-bucket-mb: '" + v + "' is not a number > 0");
    });
    p.add_bool({"--bucket-view"}, a.bucket_view);
    p.add_choice({"--optimizer"}, a.optimizer, {"none", "sgd"});
    add_timing(p, a.timing);
  } else {
    throw ArgError("unknown command '" + name + "' (allowed: " + kCommands + ")");
  }
  return p;
}

}  // namespace

uint64_t parse_size(const std::string& flag, const std::string& text) {
  const std::string what = "a size in bytes like 8, 64K, 1M, 8G (K/M/G = 1024-based)";
  if (text.empty()) throw ArgError(flag + ": empty value (expected " + what + ")");
  // The simulator's parser (core/units) is the one reading of nccl-tests sizes; a benchmark
  // buffer must be a whole number of bytes, at least one.
  const auto v = ddpsim::core::parse_nccl_tests_size(text);
  if (!v || *v < 1 || *v != std::floor(*v)) throw ArgError(flag + ": '" + text + "' is not " + what);
  if (*v >= 18446744073709551616.0) throw ArgError(flag + ": '" + text + "' is too large");
  return static_cast<uint64_t>(*v);
}

std::string usage(const std::string& command) {
  if (command.empty()) return overview();
  Command c;
  FlagParser p = make_parser(command, c);
  return "usage: ddpbench " + command + " [flags]\n" + p.help();
}

Command parse_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") return HelpRequest{overview()};
  Command c;
  FlagParser p = make_parser(args[0], c);
  if (p.parse(args, 1)) return HelpRequest{usage(args[0])};

  // Cross-flag validation.
  if (auto* a = std::get_if<AllreduceArgs>(&c)) {
    if (a->min_bytes > a->max_bytes)
      throw ArgError("-b: " + std::to_string(a->min_bytes) + " bytes is larger than -e " +
                     std::to_string(a->max_bytes));
  } else if (auto* l = std::get_if<LayersArgs>(&c)) {
    check_model_source(l->model);
  } else if (auto* s = std::get_if<StepArgs>(&c)) {
    check_model_source(s->model);
    if (s->caps.empty()) s->caps = {{1, false}, {5, false}, {25, false}, {100, false}};
  } else if (auto* k = std::get_if<ContentionArgs>(&c)) {
    if (k->bytes < 1024) throw ArgError("--bytes: " + std::to_string(k->bytes) + " is below the minimum 1K");
  }
  return c;
}

std::string command_name(const Command& c) {
  static const char* const names[] = {"help", "allreduce", "layers", "contention", "step"};
  return names[c.index()];
}

nlohmann::json config_json(const Command& c) {
  nlohmann::json j;
  j["command"] = command_name(c);
  if (auto* a = std::get_if<AllreduceArgs>(&c)) {
    j.update({{"ngpus", a->ngpus},
              {"minbytes", a->min_bytes},
              {"maxbytes", a->max_bytes},
              {"stepfactor", a->step_factor},
              {"check", a->check},
              {"datatype", "float"},
              {"op", "sum"}});
    j.update(timing_json(a->timing));
  } else if (auto* l = std::get_if<LayersArgs>(&c)) {
    j.update(model_json(l->model));
    j["device"] = l->device;
    j.update(timing_json(l->timing));
  } else if (auto* k = std::get_if<ContentionArgs>(&c)) {
    j.update(
        {{"ngpus", k->ngpus}, {"dtype", dtype_name(k->dtype)}, {"bytes", k->bytes}, {"hog_blocks", k->hog_blocks}});
    j.update(timing_json(k->timing));
  } else if (auto* s = std::get_if<StepArgs>(&c)) {
    j.update(model_json(s->model));
    nlohmann::json caps = nlohmann::json::array();
    for (const auto& cap : s->caps) caps.push_back(cap.is_default ? nlohmann::json("default") : nlohmann::json(cap.mb));
    j.update({{"ngpus", s->ngpus},
              {"caps", caps},
              {"first_bucket_mb", s->first_bucket_mb < 0 ? nlohmann::json("auto") : nlohmann::json(s->first_bucket_mb)},
              {"bucket_view", s->bucket_view},
              {"optimizer", s->optimizer}});
    j.update(timing_json(s->timing));
  }
  return j;
}

}  // namespace ddpbench
