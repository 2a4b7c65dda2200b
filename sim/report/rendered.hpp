#pragma once
// What a command produces before it writes anything: the JSON document (for --json), the text
// for the terminal and the exit status (0, or 3 when a check against measurements failed).
// Commands compute one of these, then app/ writes it (report::write_output, all or nothing).
#include <string>

#include "core/json_reader.hpp"

namespace ddpsim::report {

struct Rendered {
  core::Json doc = core::Json::object();
  std::string text;
  int status = 0;
};

}  // namespace ddpsim::report
