#pragma once
// `--set a.b.c=value`: the value is read as JSON when it parses as JSON (numbers, true, false,
// objects), otherwise as a string, so `--set ddp.comm_hook=fp16_compress` needs no quotes.
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace ddpsim::config {

// Applies each override to `doc`; throws ConfigError for a malformed override or a path that
// walks through a non-object.
void apply_overrides(core::Json& doc, const std::vector<std::string>& overrides);
// Same, for one already-split path ("ddp.bucket_cap_mb") and JSON value.
void set_path(core::Json& doc, const std::string& dotted_path, const core::Json& value, const std::string& origin);
// Refused JSON (1e999, duplicate keys, too deep) throws ConfigError naming `origin`.
core::Json parse_override_value(const std::string& text, const std::string& origin = "--set");

}  // namespace ddpsim::config
