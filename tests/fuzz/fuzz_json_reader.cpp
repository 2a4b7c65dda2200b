// The strict JSON reader and the generic ObjectReader on top of it.
#include "core/json_reader.hpp"
#include "fuzz_support.hpp"

using namespace ddpsim;

DDPSIM_FUZZ_TARGET({
  core::Json j = core::parse_json_text(text, "fuzz.json");
  (void)core::short_dump(j);
  (void)core::find_non_finite(j);
  core::Diagnostics d("fuzz.json");
  core::ObjectReader r(j, "", d);
  if (r.has("a")) (void)r.number("a", false, 0.0, true, 10.0);
  (void)r.integer_or("b", 0, -5, 5);
  (void)r.string_or("c", "");
  (void)r.quantity("d", core::Quantity::BANDWIDTH, false);
  (void)r.boolean_or("e", false);
  r.finish();
  d.throw_if_any();
})
