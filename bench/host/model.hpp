#pragma once
// A model for ddpbench: what the simulator's reader of ddpsim-model/1 files (config::parse_model,
// models/README.md) makes of it, plus the document itself so that a measured profile can be
// written back with every field preserved. ddpbench has no model parser of its own.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/specs.hpp"

namespace ddpbench {

struct Model {
  ddpsim::config::ModelSpec spec;  // validated by the simulator's parser
  nlohmann::json doc;              // the document as read (for the measured profile)

  // Sequence length of a token model (input_dtype int64, input_shape [batch, seq]); 0 otherwise.
  int64_t token_seq_len() const;
};

// Element size of a dtype name (the simulator's table); throws ModelError on an unknown name.
int dtype_bytes(const std::string& dtype);

// Validates a ddpsim-model/1 document with the simulator's parser. `origin` names the file in
// messages; every problem of the document is reported in one ModelError.
Model model_from_json(const nlohmann::json& doc, const std::string& origin);
Model load_model(const std::string& path);

// A synthetic MLP "mlp:LAYERS:HIDDEN" as a ddpsim-model/1 document: LAYERS x (linear HIDDEN->HIDDEN
// with bias, then a ReLU), export batch `batch` rows. Throws ArgError naming --synthetic.
nlohmann::json synthetic_model(const std::string& spec, int64_t batch);

// The model's document with per-layer "fwd_time_s"/"bwd_time_s" at `batch`, plus "measured_on",
// "measured_batch_size" and "measured_dtype" at the top.
nlohmann::json measured_profile(const Model& m, const std::vector<double>& fwd_s, const std::vector<double>& bwd_s,
                                const std::string& gpu_name, int64_t batch, const std::string& dtype);

}  // namespace ddpbench
