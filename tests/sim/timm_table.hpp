#pragma once
// The published timm training table on one RTX 3090 (tests/data/cnn-throughput: rows, source and
// method in its README.md) and the `ddpsim run` arguments that reproduce a row's settings: read by
// PublishedCnnThroughput_test.cpp (the accuracy check) and PredictionBand_test.cpp (the band's ends).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ddpsim::testing {

struct TimmRow {
  std::string name, model;  // timm's model name, the ddpsim model file that stands for it
  double measured = 0;      // samples per second
  double batch = 0;
};

inline std::vector<TimmRow> timm_rows() {
  std::ifstream in("tests/data/cnn-throughput/timm-train-amp-nchw-pt112-cu113-rtx3090.csv");
  std::vector<TimmRow> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) f.push_back(cell);
    if (f.size() != 7) continue;
    out.push_back({f[0], f[6], std::stod(f[1]), std::stod(f[3])});
  }
  return out;
}

// timm's benchmark.py settings: autocast float16 without a GradScaler, torch 1.12's for-loop SGD, at
// the batch that ran; `--json -` follows.
inline std::string timm_run_args(const TimmRow& r) {
  return "run --model " + r.model +
         " --cluster tests/data/cnn-throughput/one-rtx-3090.json --set training.batch_size=" +
         std::to_string(static_cast<int>(r.batch)) +
         " --set training.compute_dtype=float16 --set training.grad_scaler=false --set "
         "training.optimizer_impl=for_loop";
}

}  // namespace ddpsim::testing
