#pragma once
// Command-line parsing (CLI11, as sim/app/main.cpp) and validation for every ddpbench subcommand.
// Pure host code: no CUDA.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace ddpbench {

// Element types a layer can be timed in.
enum class DType { FLOAT32, FLOAT16, BFLOAT16 };
const char* dtype_name(DType d);
int dtype_size(DType d);

// Options shared by every subcommand that times kernels.
struct TimingArgs {
  int iters = 20;         // -n: timed iterations (the median is reported)
  int warmup = 5;         // -w: untimed iterations first
  std::string json_path;  // --json: results file ("" = none)
};

// Options of the subcommands that build layers from a model description.
struct ModelArgs {
  std::string model_path;        // --model FILE.json (ddpsim-model/1)
  std::string synthetic;         // --synthetic mlp:LAYERS:HIDDEN
  int64_t batch = 0;             // --batch (0 = the model's batch_size)
  DType dtype = DType::FLOAT32;  // --dtype
  std::string conv = "auto";     // --conv auto|cudnn|gemm
  bool tf32 = false;             // --tf32: TF32 tensor cores for float32 GEMMs
  int64_t seq_len = 0;           // --seq-len (0 = from the model's token input shape)
  int64_t head_dim = 64;         // --head-dim: k of the attention-like batched GEMMs
};

struct AllreduceArgs {
  int ngpus = 0;                    // -g (0 = every visible GPU)
  uint64_t min_bytes = 8;           // -b
  uint64_t max_bytes = 8ULL << 30;  // -e
  double step_factor = 2.0;         // -f
  bool check = true;                // -c 0|1: count wrong elements after the timed loop
  TimingArgs timing;
};

struct LayersArgs {
  ModelArgs model;
  int device = 0;  // -d: which GPU
  TimingArgs timing;
};

struct ContentionArgs {
  int ngpus = 0;                  // -g (0 = every visible GPU; 1 uses a copy kernel as background)
  DType dtype = DType::FLOAT16;   // --dtype of the foreground kernels
  uint64_t bytes = 256ULL << 20;  // --bytes: size of one background all-reduce / copy
  int hog_blocks = 16;            // --hog-blocks: CTAs of the copy kernel (NCCL uses one per channel)
  TimingArgs timing;
};

// One entry of --caps: a bucket_cap_mb value, or PyTorch's default (25 with a 1 MiB first bucket).
struct CapSpec {
  double mb = 25.0;
  bool is_default = false;
  bool operator==(const CapSpec&) const = default;
};

struct StepArgs {
  ModelArgs model;
  int ngpus = 0;                   // -g
  std::vector<CapSpec> caps;       // --caps (default 1,5,25,100)
  double first_bucket_mb = -1;     // --first-bucket-mb (-1 = PyTorch's rule, see buckets.hpp)
  bool bucket_view = false;        // --bucket-view: gradient_as_bucket_view (no copy out of buckets)
  std::string optimizer = "none";  // --optimizer none|sgd
  TimingArgs timing;
};

// `--help`, `help` or no command at all: the text to print (exit status 0).
struct HelpRequest {
  std::string text;
};

using Command = std::variant<HelpRequest, AllreduceArgs, LayersArgs, ContentionArgs, StepArgs>;

// Parses argv[1..] (the subcommand first) with CLI11. A bad command line throws ArgError whose
// message names the flag, quotes the bad value and says what is allowed (main() exits with 2).
Command parse_command(const std::vector<std::string>& args);

// The subcommand name of a parsed command ("allreduce", ...; "help").
std::string command_name(const Command& c);

// Every flag of a parsed command with its effective value, for the results file.
nlohmann::json config_json(const Command& c);

// "8", "8K", "8M", "8G" (binary multiples, as nccl-tests; core::parse_nccl_tests_size) -> bytes,
// a whole number >= 1. Throws ArgError naming `flag`.
uint64_t parse_size(const std::string& flag, const std::string& text);

}  // namespace ddpbench
