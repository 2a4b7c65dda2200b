#pragma once
// Reading the optional per-layer `kernels` records and the top-level `kernel_scaling` of a
// ddpsim-model/1 file (models/README.md, "Kernel records").
#include <vector>

#include "config/specs.hpp"
#include "core/json_reader.hpp"

namespace ddpsim::config {

// layers[i].host_ops: {"views", "view_nodes", "module_calls"}, non-negative integers, view_nodes <=
// views (models/README.md).
void read_host_ops(const core::Json& j, const std::string& path, LayerSpec& layer, core::Diagnostics& d);

std::vector<KernelRecord> read_kernel_records(const core::Json& j, const std::string& path, core::Diagnostics& d);
void read_kernel_scaling(const core::Json& j, ModelSpec& m, core::Diagnostics& d);

}  // namespace ddpsim::config

namespace ddpsim::config {

// The bundled GPU preset (configs/gpus stem) a measured profile's `measured_on` names: the CUDA
// device name as cudaGetDeviceProperties / torch.cuda.get_device_name / nvidia-smi print it
// ("NVIDIA H100 80GB HBM3"), optionally prefixed "cuda: " (scripts/ddpsim_profile.py). Exact,
// case-insensitive matches only; "" for CPUs, traces without a device and unlisted GPUs.
std::string gpu_preset_for_device(const std::string& measured_on);

}  // namespace ddpsim::config
