#pragma once
// The subset of a ddpsim-model/1 file (models/README.md) that ddpbench needs, plus the original
// JSON so a measured profile can be written back with every field preserved.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ddpbench {

struct ModelParam {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "float32";
  bool requires_grad = true;
  int64_t numel() const;
  uint64_t bytes() const;  // numel x dtype size
};

struct ModelLayer {
  std::string name;
  std::string type;  // conv2d, linear, matmul, batchnorm, layernorm, embedding, elementwise, pool, softmax, other
  std::vector<int> params;                                            // indices into Model::params
  double fwd_flops = 0, bwd_flops = 0, fwd_bytes = 0, bwd_bytes = 0;  // whole export batch
};

struct Model {
  std::string name;
  int64_t batch_size = 1;
  std::vector<int64_t> input_shape;
  std::string input_dtype = "float32";
  std::vector<ModelParam> params;
  std::vector<ModelLayer> layers;
  std::vector<int> grad_ready_order;
  nlohmann::json raw;  // the file as read (for the measured profile)

  // Sequence length of a token model (input_dtype int64, input_shape [batch, seq]); 0 otherwise.
  int64_t token_seq_len() const;
};

int dtype_bytes(const std::string& dtype);  // float32 4, float16/bfloat16 2, float64/int64 8, ...; throws ModelError

// Parses and validates a ddpsim-model/1 document. `origin` names the file in error messages; all
// problems of the document are reported in one ModelError.
Model parse_model(const nlohmann::json& j, const std::string& origin);
Model load_model(const std::string& path);

// A synthetic MLP "mlp:LAYERS:HIDDEN" as a ddpsim-model/1 document: LAYERS x (linear HIDDEN->HIDDEN
// with bias, then a ReLU), export batch `batch` rows. Throws ArgError naming --synthetic.
nlohmann::json synthetic_model(const std::string& spec, int64_t batch);

// The model JSON with per-layer "fwd_time_s"/"bwd_time_s" at `batch`, plus "measured_on",
// "measured_batch_size" and "measured_dtype" at the top.
nlohmann::json measured_profile(const Model& m, const std::vector<double>& fwd_s, const std::vector<double>& bwd_s,
                                const std::string& gpu_name, int64_t batch, const std::string& dtype);

}  // namespace ddpbench
