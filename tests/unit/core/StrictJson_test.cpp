// The strict reader: duplicate keys, depth, number overflow, non-regular and oversized files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "core/units.hpp"

namespace ddpsim::core {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(StrictJson, DuplicateKeysAreRefusedWithTheirPath) {
  EXPECT_EQ(error_of(R"({"a": 1, "a": 2})"), "f.json: /a: duplicate key \"a\"; each key may appear once in an object");
  EXPECT_EQ(error_of(R"({"x": [{"b": 1}, {"c": {"d": 1, "d": 1}}]})"),
            "f.json: /x/1/c/d: duplicate key \"d\"; each key may appear once in an object");
  EXPECT_EQ(error_of(R"({"a": {"k": 1}, "b": {"k": 2}})"), "");  // the same key in two objects is fine
}

TEST(StrictJson, NestingBeyondTheLimitIsRefused) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(error_of(ok), "");
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_NE(error_of(deep).find("nested deeper than 256 levels is not allowed"), std::string::npos);
  // A million levels: refused at level 257, no recursion anywhere.
  EXPECT_NE(error_of(std::string(1000000, '[')).find("nested deeper than 256"), std::string::npos);
  EXPECT_NE(error_of(R"({"a": )" + std::string(300, '[')).find("f.json: /a/0/0/0"), std::string::npos);
}

TEST(StrictJson, NumbersBeyondDoubleRangeNameLineAndColumn) {
  EXPECT_EQ(error_of("{\n  \"a\": 1e999\n}"), "f.json:2:12: 1e999 is not allowed; expected a finite number");
  EXPECT_NE(error_of("[-1E400]").find("-1E400 is not allowed"), std::string::npos);
  EXPECT_EQ(error_of("[1e308, 18446744073709551616]"), "");  // large but finite
  EXPECT_NE(error_of("{\"a\": }").find("f.json:1:7: not valid JSON"), std::string::npos);
}

TEST(StrictJson, ParseIfJsonTellsTextFromRefusedJson) {
  EXPECT_FALSE(parse_json_if_json("fp16_compress", "--set").has_value());
  EXPECT_EQ(*parse_json_if_json("50", "--set"), Json(50));
  EXPECT_THROW(parse_json_if_json("1e999", "--set"), ConfigError);
  EXPECT_THROW(parse_json_if_json(R"({"a":1,"a":2})", "--set"), ConfigError);
}

TEST(StrictJson, NonRegularAndOversizedFilesAreRefused) {
  EXPECT_NE(std::string([] {
              try {
                read_text_file("/dev/zero");
              } catch (const ConfigError& e) {
                return std::string(e.what());
              }
              return std::string();
            }())
                .find("/dev/zero: is not a regular file"),
            std::string::npos);
  EXPECT_THROW(read_text_file("/"), ConfigError);
  EXPECT_THROW(read_text_file("/nonexistent/x.json"), ConfigError);
  const auto p = std::filesystem::temp_directory_path() / ("ddpsim-big-" + std::to_string(::getpid()));
  std::ofstream(p) << std::string(5000, 'x');
  ::setenv("DDPSIM_MAX_INPUT_BYTES", "4096", 1);
  try {
    read_text_file(p.string());
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the input limit of 4096 bytes; set DDPSIM_MAX_INPUT_BYTES"),
              std::string::npos);
  }
  ::unsetenv("DDPSIM_MAX_INPUT_BYTES");
  EXPECT_EQ(read_text_file(p.string()).size(), 5000u);
  std::filesystem::remove(p);
}

TEST(StrictJson, FindNonFiniteNamesThePath) {
  Json j = {{"a", {1.0, 2.0, std::nan("")}}, {"b", 1}};
  EXPECT_EQ(find_non_finite(j).value_or(""), "/a/2");
  EXPECT_FALSE(find_non_finite(Json{{"a", 1.5}}).has_value());
}

TEST(StrictJson, NumbersWithoutABoundStopAt1e18) {
  Json j = {{"x", 2e18}, {"y", 1e18}};
  Diagnostics d("f.json");
  ObjectReader r(j, "", d);
  EXPECT_FALSE(r.number("x", false, 0.0).has_value());
  EXPECT_TRUE(r.number("y", false, 0.0).has_value());
  ASSERT_EQ(d.problems().size(), 1u);
  EXPECT_EQ(d.problems()[0], "f.json: /x: 2e+18 is not allowed; expected a number >= 0.0 and <= 1e+18");
}

TEST(StrictUnits, QuantitiesOutsideTheirRangeAfterScalingAreRefused) {
  std::string why;
  EXPECT_FALSE(parse_quantity("1e308TBps", Quantity::BANDWIDTH, &why).has_value());  // inf after scaling
  EXPECT_NE(why.find("between 1Bps and 1e15Bps"), std::string::npos) << why;
  EXPECT_FALSE(parse_quantity("1e30TBps", Quantity::BANDWIDTH).has_value());
  EXPECT_FALSE(parse_quantity("1e-300bps", Quantity::BANDWIDTH).has_value());
  EXPECT_DOUBLE_EQ(*parse_quantity("1000TBps", Quantity::BANDWIDTH), 1e15);
  EXPECT_FALSE(parse_quantity("2e6s", Quantity::TIME).has_value());
  EXPECT_FALSE(parse_quantity("1e19B", Quantity::BYTES).has_value());
  EXPECT_FALSE(parse_quantity("2e3PFLOPS", Quantity::FLOP_RATE).has_value());
  EXPECT_DOUBLE_EQ(*parse_quantity("0B", Quantity::BYTES), 0.0);
}

}  // namespace
}  // namespace ddpsim::core
