#include "args.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>

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

using ddpsim::core::split_list;

// ---- values: each check returns "" or what is wrong with the value (CLI11 prefixes the flag) ----

std::string quoted(const std::string& v) { return "'" + v + "'"; }

std::string integer_problem(const std::string& v, int64_t min_value, int64_t max_value) {
  const std::string what = "an integer >= " + std::to_string(min_value);
  size_t pos = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &pos);
  } catch (const std::exception&) {
    return quoted(v) + " is not " + what;
  }
  if (pos != v.size() || x < min_value) return quoted(v) + " is not " + what;
  if (x > max_value) return quoted(v) + " is too large (at most " + std::to_string(max_value) + ")";
  return {};
}

std::string number_above_problem(const std::string& v, double bound, const std::string& bound_text) {
  size_t pos = 0;
  double x = 0;
  bool ok = true;
  try {
    x = std::stod(v, &pos);
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok || pos != v.size() || !std::isfinite(x) || x <= bound) return quoted(v) + " is not a number > " + bound_text;
  return {};
}

const char* const kSizeWhat = "a size in bytes like 8, 64K, 1M, 8G (K/M/G = 1024-based)";

// The simulator's parser (core/units) is the one reading of nccl-tests sizes; a benchmark buffer
// must be a whole number of bytes, at least one.
std::string size_problem(const std::string& text, uint64_t* bytes) {
  if (text.empty()) return std::string("empty value (expected ") + kSizeWhat + ")";
  const auto v = ddpsim::core::parse_nccl_tests_size(text);
  if (!v || *v < 1 || *v != std::floor(*v)) return quoted(text) + " is not " + kSizeWhat;
  if (*v >= 18446744073709551616.0) return quoted(text) + " is too large";
  if (bytes) *bytes = static_cast<uint64_t>(*v);
  return {};
}

// --caps: bucket_cap_mb values or "default" (PyTorch's default cap with its 1 MiB first bucket).
std::string caps_problem(const std::string& v, std::vector<CapSpec>* caps) {
  std::vector<CapSpec> out;
  for (const auto& item : split_list(v)) {
    if (item == "default") {
      out.push_back({ddpsim::config::DdpSettings{}.bucket_cap_mb, true});
      continue;
    }
    if (!number_above_problem(item, 0, "0").empty())
      return quoted(item) + " in " + quoted(v) + " is not a number > 0 or 'default'";
    out.push_back({std::stod(item), false});
  }
  if (out.empty()) return quoted(v) + " is empty (expected e.g. 1,5,25,100 or default)";
  if (caps) *caps = std::move(out);
  return {};
}

// ---- CLI11 validators over those checks (CLI11 2.1's PositiveNumber prints a range up to 1.8e308) ----

CLI::Validator integer_at_least(int64_t min_value, int64_t max_value) {
  return CLI::Validator([=](std::string& v) { return integer_problem(v, min_value, max_value); },
                        "INT>=" + std::to_string(min_value));
}

CLI::Validator number_above(double bound, const std::string& bound_text) {
  return CLI::Validator([=](std::string& v) { return number_above_problem(v, bound, bound_text); },
                        "NUM>" + bound_text);
}

// Rewrites "64K" as "65536" before CLI11 converts the value to an integer.
CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& v) {
        uint64_t bytes = 0;
        std::string problem = size_problem(v, &bytes);
        if (problem.empty()) v = std::to_string(bytes);
        return problem;
      },
      "SIZE");
}

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) { return v.empty() ? "empty value (expected " + what + ")" : std::string(); }, "");
}

std::vector<std::string> dtype_choices() { return {"float32", "float16", "bfloat16"}; }

DType to_dtype(const std::string& v) {
  if (v == "float16") return DType::FLOAT16;
  if (v == "bfloat16") return DType::BFLOAT16;
  return DType::FLOAT32;  // the only other value IsMember lets through
}

// ---- the subcommands' flags ----

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

void add_timing(CLI::App& c, TimingArgs& t) {
  c.add_option("-n,--iters", t.iters, "timed iterations; the median is reported")
      ->check(integer_at_least(1, kIntMax))
      ->capture_default_str();
  c.add_option("-w,--warmup", t.warmup, "untimed iterations first")
      ->check(integer_at_least(0, kIntMax))
      ->capture_default_str();
  c.add_option("--json", t.json_path, "write a ddpbench-results/1 file here")->check(non_empty("a file path"));
}

void add_dtype(CLI::App& c, DType& target, const std::string& help) {
  c.add_option_function<std::string>(
       "--dtype", [&target](const std::string& v) { target = to_dtype(v); }, help)
      ->check(CLI::IsMember(dtype_choices()))
      ->default_str(dtype_name(target));
}

void add_ngpus(CLI::App& c, int& ngpus, const std::string& help) {
  c.add_option("-g,--ngpus", ngpus, help)->check(integer_at_least(0, kIntMax))->capture_default_str();
}

void add_model(CLI::App& c, ModelArgs& m) {
  c.add_option("--model", m.model_path, "a ddpsim-model/1 file (models/README.md)")
      ->check(non_empty("a ddpsim-model/1 JSON file"));
  c.add_option("--synthetic", m.synthetic, "a synthetic MLP instead of --model: mlp:LAYERS:HIDDEN")
      ->check(non_empty("mlp:LAYERS:HIDDEN"));
  c.add_option("--batch", m.batch, "batch size (default: the model's batch_size; 64 for --synthetic)")
      ->check(integer_at_least(1, kInt64Max));
  add_dtype(c, m.dtype, "compute precision (activation bytes scale with it)");
  c.add_option("--conv", m.conv, "conv2d as cuDNN convolutions (auto: when built with cuDNN) or implicit GEMMs")
      ->check(CLI::IsMember({"auto", "cudnn", "gemm"}))
      ->capture_default_str();
  c.add_flag("--tf32", m.tf32, "TF32 tensor cores for float32 GEMMs (PyTorch's matmul default is off)");
  c.add_option("--seq-len", m.seq_len, "sequence length of attention matmuls (default: a token model's input_shape[1])")
      ->check(integer_at_least(1, kInt64Max));
  c.add_option("--head-dim", m.head_dim, "k of the attention-like batched GEMMs")
      ->check(integer_at_least(1, kInt64Max))
      ->capture_default_str();
}

void add_allreduce(CLI::App& c, AllreduceArgs& a) {
  add_ngpus(c, a.ngpus, "GPUs, one thread each (0 = every visible GPU)");
  c.add_option("-b,--minbytes", a.min_bytes, "smallest size (8, 64K, 1M, 8G; 1024-based)")
      ->transform(byte_size())
      ->default_str("8");
  c.add_option("-e,--maxbytes", a.max_bytes, "largest size")->transform(byte_size())->default_str("8G");
  c.add_option("-f,--stepfactor", a.step_factor, "size multiplier between rows")
      ->check(number_above(1, "1"))
      ->capture_default_str();
  c.add_option("-c,--check", a.check, "count wrong elements after the timed loop (0 skips it)")
      ->check(CLI::IsMember({"0", "1"}))
      ->default_str("1");
  add_timing(c, a.timing);
}

void add_layers(CLI::App& c, LayersArgs& a) {
  add_model(c, a.model);
  c.add_option("-d,--device", a.device, "which GPU")->check(integer_at_least(0, kIntMax))->capture_default_str();
  add_timing(c, a.timing);
}

void add_contention(CLI::App& c, ContentionArgs& a) {
  add_ngpus(c, a.ngpus, "GPUs (0 = every visible GPU; 1: a copy kernel is the background)");
  add_dtype(c, a.dtype, "precision of the foreground kernels");
  c.add_option("--bytes", a.bytes, "size of one background all-reduce / copy (at least 1K)")
      ->transform(byte_size())
      ->default_str("256M");
  c.add_option("--hog-blocks", a.hog_blocks, "CTAs of the background copy kernel (NCCL takes one per channel)")
      ->check(integer_at_least(1, kIntMax))
      ->capture_default_str();
  add_timing(c, a.timing);
}

void add_step(CLI::App& c, StepArgs& a) {
  add_model(c, a.model);
  add_ngpus(c, a.ngpus, "GPUs, one thread each (0 = every visible GPU)");
  c.add_option_function<std::string>(
       "--caps", [&a](const std::string& v) { (void)caps_problem(v, &a.caps); },
       "bucket_cap_mb values to sweep, comma-separated; 'default' = PyTorch's default (25 with a 1 MiB first bucket)")
      ->check(CLI::Validator([](std::string& v) { return caps_problem(v, nullptr); }, "LIST"))
      ->default_str("1,5,25,100");
  c.add_option("--first-bucket-mb", a.first_bucket_mb,
               "first bucket's limit in MiB (default: PyTorch's rule; 1 reproduces older releases)")
      ->check(number_above(0, "0"));
  c.add_flag("--bucket-view", a.bucket_view, "gradient_as_bucket_view=True: no copy out of the buckets");
  c.add_option("--optimizer", a.optimizer, "update after the step")
      ->check(CLI::IsMember({"none", "sgd"}))
      ->capture_default_str();
  add_timing(c, a.timing);
}

void check_model_source(const ModelArgs& m) {
  if (m.model_path.empty() == m.synthetic.empty())
    throw ArgError("--model/--synthetic: exactly one is required (--model FILE.json or --synthetic mlp:LAYERS:HIDDEN)");
}

nlohmann::json timing_json(const TimingArgs& t) {
  return {{"iters", t.iters}, {"warmup", t.warmup}, {"json", t.json_path}};
}

nlohmann::json model_json(const ModelArgs& m) {
  return {{"model", m.model_path}, {"synthetic", m.synthetic}, {"batch", m.batch},     {"dtype", dtype_name(m.dtype)},
          {"conv", m.conv},        {"tf32", m.tf32},           {"seq_len", m.seq_len}, {"head_dim", m.head_dim}};
}

}  // namespace

uint64_t parse_size(const std::string& flag, const std::string& text) {
  uint64_t bytes = 0;
  if (std::string problem = size_problem(text, &bytes); !problem.empty()) throw ArgError(flag + ": " + problem);
  return bytes;
}

Command parse_command(const std::vector<std::string>& args) {
  AllreduceArgs allreduce;
  LayersArgs layers;
  ContentionArgs contention;
  StepArgs step;
  CLI::App app{"ddpbench: measures on real GPUs what ddpsim simulates (bench/README.md)", "ddpbench"};
  app.require_subcommand(0, 1);
  auto* help_cmd = app.add_subcommand("help", "print this overview");
  auto* allreduce_cmd = app.add_subcommand("allreduce", "nccl-tests-style ncclAllReduce size sweep");
  add_allreduce(*allreduce_cmd, allreduce);
  auto* layers_cmd = app.add_subcommand("layers", "forward/backward time of each layer of a ddpsim-model/1 file");
  add_layers(*layers_cmd, layers);
  auto* contention_cmd =
      app.add_subcommand("contention", "compute kernels alone vs beside an all-reduce (or a copy kernel)");
  add_contention(*contention_cmd, contention);
  auto* step_cmd = app.add_subcommand("step", "synthetic DDP step with PyTorch's bucket plan, swept over bucket caps");
  add_step(*step_cmd, step);

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the vector back to front
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return HelpRequest{app.help()};  // the chosen subcommand's help, or the overview
  } catch (const CLI::ExtrasError& e) {
    if (app.get_subcommands().empty() && !args.empty() && args[0].rfind('-', 0) != 0) {
      std::string names;
      for (const auto* c : {allreduce_cmd, layers_cmd, contention_cmd, step_cmd})
        names += (names.empty() ? "" : ", ") + c->get_name();
      throw ArgError("unknown command '" + args[0] + "' (allowed: " + names + ")");
    }
    throw ArgError(e.what());
  } catch (const CLI::ParseError& e) {
    throw ArgError(e.what());
  }

  // Checks across flags.
  if (*allreduce_cmd) {
    if (allreduce.min_bytes > allreduce.max_bytes)
      throw ArgError("-b: " + std::to_string(allreduce.min_bytes) + " bytes is larger than -e " +
                     std::to_string(allreduce.max_bytes));
    return allreduce;
  }
  if (*layers_cmd) {
    check_model_source(layers.model);
    return layers;
  }
  if (*contention_cmd) {
    if (contention.bytes < 1024)
      throw ArgError("--bytes: " + std::to_string(contention.bytes) + " is below the minimum 1K");
    return contention;
  }
  if (*step_cmd) {
    check_model_source(step.model);
    if (step.caps.empty()) step.caps = {{1, false}, {5, false}, {25, false}, {100, false}};
    return step;
  }
  // `ddpbench help` and `ddpbench` alone: the overview (app.help() would describe `help` itself).
  (void)help_cmd;
  return HelpRequest{app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal)};
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
