#pragma once
// Text and JSON views of the catalog's contents: `ddpsim buckets` (DDP's bucket plans),
// `ddpsim show` (a model's layers) and `ddpsim list` (one line per bundled file).
#include <filesystem>
#include <string>

#include "config/catalog.hpp"
#include "ddp/bucketizer.hpp"
#include "report/rendered.hpp"

namespace ddpsim::report {

// Iteration-1 and steady-state plans of `model` under `ddp`.
Rendered bucket_plans_view(const config::ModelSpec& model, const config::DdpSettings& ddp,
                           const ddp::BucketPlans& plans);

// Every layer with its parameters, FLOPs per sample and measured times, and the totals.
Rendered model_layers_view(const config::ModelSpec& model);

// One line describing the bundled file `path` of `kind` ("INVALID: why" when it does not load).
std::string catalog_entry_summary(const config::Catalog& cat, config::Kind kind, const std::filesystem::path& path);

}  // namespace ddpsim::report
