#pragma once
// Per-layer compute times for one rank: measured times from the profile when present (scaled
// linearly with batch), else a roofline estimate max(FLOPs / (peak * eff), bytes / (HBM * eff)).
#include <string>
#include <vector>

#include "config/specs.hpp"

namespace ddpsim::gpu {

struct ComputeProfile {
  std::vector<double> forward;   // seconds per layer, forward order
  std::vector<double> backward;  // seconds per layer (indexed like `forward`)
  std::vector<double> copy_in;   // seconds per parameter: the DDP hook's grad -> bucket copy
  std::vector<double> copy_out;  // seconds per parameter: bucket -> grad copy in finalize_backward
  double optimizer = 0;
  double forward_total = 0, backward_total = 0;
  int measured_layers = 0;  // layers timed from measurements rather than the roofline
  std::string compute_dtype;
  double peak_flops = 0;  // the peak used for the roofline
};

// Roofline time of one kernel of `flops` and `bytes` on `gpu`.
double roofline_time(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                     const config::ComputeSettings& s);

ComputeProfile build_compute_profile(const config::Scenario& scenario);

// Bytes an optimizer step moves per parameter element of `elem_size` bytes.
double optimizer_bytes_per_element(const std::string& optimizer, int elem_size);

}  // namespace ddpsim::gpu
