// Unit tests for strict JSON reading (sim/core/json_reader.*): every problem names the file, the JSON
// path, the bad value and what is allowed, and all problems of a file come back in one ConfigError.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "support/builders.hpp"

using ddpsim::core::ConfigError;
using ddpsim::core::Diagnostics;
using ddpsim::core::Json;
using ddpsim::core::ObjectReader;
using ddpsim::core::Quantity;
using ddpsim::test_support::allowed_keys;
using ddpsim::test_support::contains_all;
using ddpsim::test_support::expect_config_error;
using ddpsim::test_support::TempDir;

TEST(Diagnostics, ProblemNamesFilePathAndMessage) {
  Diagnostics d("a.json");
  EXPECT_TRUE(d.ok());
  d.add("/x/y", "broken");
  d.add("", "root problem");
  EXPECT_FALSE(d.ok());
  ASSERT_EQ(d.problems().size(), 2u);
  EXPECT_EQ(d.problems()[0], "a.json: /x/y: broken");
  EXPECT_EQ(d.problems()[1], "a.json: /: root problem");
}

TEST(Diagnostics, AddValueQuotesValueAndAllowed) {
  Diagnostics d("a.json");
  d.add_value("/ddp/bucket_cap_mb", Json(-3), "a number > 0");
  ASSERT_EQ(d.problems().size(), 1u);
  EXPECT_EQ(d.problems()[0], "a.json: /ddp/bucket_cap_mb: -3 is not allowed; expected a number > 0");
}

TEST(Diagnostics, ThrowIfAnyCollectsEveryProblem) {
  Diagnostics clean("ok.json");
  EXPECT_NO_THROW(clean.throw_if_any());

  Diagnostics d("f.json");
  d.add("/a", "first");
  d.add("/b", "second");
  d.add("/c", "third");
  auto e = expect_config_error([&] { d.throw_if_any(); });
  ASSERT_EQ(e.problems().size(), 3u);
  EXPECT_EQ(e.problems()[2], "f.json: /c: third");
  EXPECT_STREQ(e.what(), "f.json: /a: first\nf.json: /b: second\nf.json: /c: third");
}

TEST(JsonReader, JoinPathEscapesPointerCharacters) {
  EXPECT_EQ(ddpsim::core::join_path("", "ddp"), "/ddp");
  EXPECT_EQ(ddpsim::core::join_path("/ddp", "bucket_cap_mb"), "/ddp/bucket_cap_mb");
  // RFC 6901: '~' -> "~0", '/' -> "~1".
  EXPECT_EQ(ddpsim::core::join_path("/a", "b/c~d"), "/a/b~1c~0d");
}

TEST(JsonReader, ShortDumpTruncatesLongValues) {
  EXPECT_EQ(ddpsim::core::short_dump(Json("abc")), "\"abc\"");
  const std::string long_text(100, 'x');
  const std::string dumped = ddpsim::core::short_dump(Json(long_text));
  EXPECT_EQ(dumped.size(), 60u);
  EXPECT_EQ(dumped.substr(57), "...");
}

TEST(JsonReader, ReadsTypedValues) {
  Json j = Json::parse(R"({"n": 2.5, "i": 7, "f": 4.0, "b": true, "s": "ring", "q": "25MiB", "z": "0s"})");
  Diagnostics d("t.json");
  ObjectReader r(j, "/obj", d);
  EXPECT_DOUBLE_EQ(*r.number("n", true), 2.5);
  EXPECT_EQ(*r.integer("i", true, 0, 10), 7);
  EXPECT_EQ(*r.integer("f", true, 0, 10), 4);  // a float with an integral value is an integer
  EXPECT_TRUE(r.boolean_or("b", false));
  EXPECT_EQ(*r.string("s", true, {"ring", "tree"}), "ring");
  EXPECT_DOUBLE_EQ(*r.quantity("q", Quantity::BYTES, true), 25.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(*r.quantity("z", Quantity::TIME, true, /*allow_zero=*/true), 0.0);
  r.finish();
  EXPECT_TRUE(d.ok()) << d.problems().front();
}

TEST(JsonReader, AbsentOptionalKeysGiveFallbacks) {
  Json j = Json::object();
  Diagnostics d("t.json");
  ObjectReader r(j, "", d);
  EXPECT_FALSE(r.has("x"));
  EXPECT_DOUBLE_EQ(r.number_or("x", 1.25), 1.25);
  EXPECT_EQ(r.integer_or("y", 9, 0, 10), 9);
  EXPECT_FALSE(r.boolean_or("z", false));
  EXPECT_EQ(r.string_or("w", "dflt"), "dflt");
  EXPECT_FALSE(r.quantity("q", Quantity::TIME, false).has_value());
  EXPECT_EQ(r.raw("r"), nullptr);
  r.finish();
  EXPECT_TRUE(d.ok());
}

TEST(JsonReader, UnknownKeyListsAllowedKeys) {
  Json j = Json::parse(R"({"alpha": 1, "beta": 2, "gamma_typo": 3})");
  Diagnostics d("u.json");
  ObjectReader r(j, "/ddp", d);
  r.number("alpha", false);
  r.number("beta", false);
  r.accept("gamma");
  r.finish();
  ASSERT_EQ(d.problems().size(), 1u);
  EXPECT_TRUE(contains_all(d.problems()[0], {"u.json", "/ddp/gamma_typo", "unknown key"}));
  // Exactly the keys read or accepted, as whole entries.
  EXPECT_EQ(allowed_keys(d.problems()[0]), (std::vector<std::string>{"alpha", "beta", "gamma"}));
}

TEST(JsonReader, WrongTypeNamesValueAndExpectedType) {
  Json j = Json::parse(R"({"n": "abc", "i": "7", "b": "yes", "s": 5, "q": 25})");
  Diagnostics d("w.json");
  ObjectReader r(j, "/o", d);
  EXPECT_FALSE(r.number("n", true).has_value());
  EXPECT_FALSE(r.integer("i", true, 0, 10).has_value());
  EXPECT_TRUE(r.boolean_or("b", true));  // fallback on a wrong type
  EXPECT_FALSE(r.string("s", true).has_value());
  EXPECT_FALSE(r.quantity("q", Quantity::BYTES, true).has_value());
  r.finish();
  ASSERT_EQ(d.problems().size(), 5u);
  EXPECT_TRUE(contains_all(d.problems()[0], {"w.json", "/o/n", "\"abc\"", "a number"}));
  EXPECT_TRUE(contains_all(d.problems()[1], {"/o/i", "\"7\"", "an integer in [0, 10]"}));
  EXPECT_TRUE(contains_all(d.problems()[2], {"/o/b", "\"yes\"", "true or false"}));
  EXPECT_TRUE(contains_all(d.problems()[3], {"/o/s", "5", "a string"}));
  EXPECT_TRUE(contains_all(d.problems()[4], {"/o/q", "25", "MiB", "> 0"}));
}

TEST(JsonReader, OutOfRangeNamesBounds) {
  Json j = Json::parse(R"({"cap": -3, "eff": 1.5, "n": 9, "m": 2.5, "zero": 0, "pos": "0B", "neg": "-1us"})");
  Diagnostics d("r.json");
  ObjectReader r(j, "", d);
  EXPECT_FALSE(r.number("cap", true, 0.0, /*min_exclusive=*/true).has_value());
  EXPECT_FALSE(r.number("eff", true, 0.0, true, 1.0).has_value());
  EXPECT_FALSE(r.integer("n", true, 1, 8).has_value());
  EXPECT_FALSE(r.integer("m", true, 1, 8).has_value());  // not integral
  EXPECT_FALSE(r.number("zero", true, 0.0, true).has_value());
  EXPECT_FALSE(r.quantity("pos", Quantity::BYTES, true).has_value());  // zero needs allow_zero
  EXPECT_FALSE(r.quantity("neg", Quantity::TIME, true, true).has_value());
  r.finish();
  ASSERT_EQ(d.problems().size(), 7u);
  EXPECT_TRUE(contains_all(d.problems()[0], {"r.json", "/cap", "-3", "> 0"}));
  EXPECT_TRUE(contains_all(d.problems()[1], {"/eff", "1.5", "> 0", "<= 1"}));
  EXPECT_TRUE(contains_all(d.problems()[2], {"/n", "9", "[1, 8]"}));
  EXPECT_TRUE(contains_all(d.problems()[3], {"/m", "2.5", "[1, 8]"}));
  EXPECT_TRUE(contains_all(d.problems()[4], {"/zero", "0", "> 0"}));
  EXPECT_TRUE(contains_all(d.problems()[5], {"/pos", "\"0B\"", "> 0"}));
  EXPECT_TRUE(contains_all(d.problems()[6], {"/neg", "\"-1us\"", ">= 0"}));
}

TEST(JsonReader, InclusiveMinimumAcceptsBound) {
  Json j = Json::parse(R"({"a": 0, "b": 0})");
  Diagnostics d("t.json");
  ObjectReader r(j, "", d);
  EXPECT_DOUBLE_EQ(*r.number("a", true, 0.0, false), 0.0);
  EXPECT_FALSE(r.number("b", true, 0.0, true).has_value());
  EXPECT_EQ(d.problems().size(), 1u);
}

TEST(JsonReader, StringNotInAllowedListListsChoices) {
  Json j = Json::parse(R"({"optimizer": "lamb"})");
  Diagnostics d("s.json");
  ObjectReader r(j, "/training", d);
  EXPECT_EQ(r.string_or("optimizer", "sgd", {"sgd", "adam", "adamw"}), "sgd");
  ASSERT_EQ(d.problems().size(), 1u);
  EXPECT_TRUE(
      contains_all(d.problems()[0], {"s.json", "/training/optimizer", "\"lamb\"", "\"sgd\"", "\"adam\"", "\"adamw\""}));
  // Nothing close to "lamb": no suggestion. A value that differs in case or by an edit or two is named.
  EXPECT_EQ(d.problems()[0].find("did you mean"), std::string::npos) << d.problems()[0];
  Json k = Json::parse(R"({"comm_hook": "powerSGD"})");
  Diagnostics e("s.json");
  ObjectReader q(k, "/ddp", e);
  EXPECT_EQ(q.string_or("comm_hook", "allreduce", {"allreduce", "powersgd", "fp16_compress"}), "allreduce");
  ASSERT_EQ(e.problems().size(), 1u);
  EXPECT_NE(e.problems()[0].find("; did you mean \"powersgd\"?"), std::string::npos) << e.problems()[0];
}

TEST(JsonReader, MissingRequiredNamesKeyAndWhatIsRequired) {
  Json j = Json::object();
  Diagnostics d("m.json");
  ObjectReader r(j, "/cluster", d);
  r.string("name", true);
  r.integer("nodes", true, 1, 64);
  r.quantity("bandwidth", Quantity::BANDWIDTH, true);
  ASSERT_EQ(d.problems().size(), 3u);
  EXPECT_TRUE(contains_all(d.problems()[0], {"m.json", "/cluster/name", "missing", "a string"}));
  EXPECT_TRUE(contains_all(d.problems()[1], {"/cluster/nodes", "missing", "[1, 64]"}));
  EXPECT_TRUE(contains_all(d.problems()[2], {"/cluster/bandwidth", "missing", "Gbps"}));
}

TEST(JsonReader, NonObjectIsOneProblemAndReadsDefault) {
  Json j = Json::array({1, 2});
  Diagnostics d("n.json");
  ObjectReader r(j, "/ddp", d);
  EXPECT_FALSE(r.has("x"));
  EXPECT_FALSE(r.number("x", true).has_value());  // no second "missing" problem
  EXPECT_EQ(r.integer_or("y", 3, 0, 5), 3);
  r.finish();  // no unknown-key problems either
  ASSERT_EQ(d.problems().size(), 1u);
  EXPECT_TRUE(contains_all(d.problems()[0], {"n.json", "/ddp", "[1,2]", "an object"}));
}

TEST(JsonReader, AllProblemsCollectedInOneConfigError) {
  Json j = Json::parse(R"({"a": "x", "b": -1, "typo": true})");
  Diagnostics d("all.json");
  ObjectReader r(j, "", d);
  r.number("a", true);
  r.number("b", true, 0.0);
  r.string("c", true);
  r.finish();
  auto e = expect_config_error([&] { d.throw_if_any(); });
  ASSERT_EQ(e.problems().size(), 4u);
  const std::string msg = e.what();
  EXPECT_TRUE(contains_all(msg, {"all.json: /a", "all.json: /b", "all.json: /c", "all.json: /typo"}));
}

TEST(JsonReader, SyntaxErrorNamesFileLineAndColumn) {
  // Line 3 is `  "b": }`: the stray '}' is at column 8.
  const std::string text = "{\n  \"a\": 1,\n  \"b\": }\n";
  auto e = expect_config_error([&] { ddpsim::core::parse_json_text(text, "bad.json"); });
  EXPECT_TRUE(contains_all(e.what(), {"bad.json:3:8", "not valid JSON"}));
}

TEST(JsonReader, SyntaxErrorOnFirstLine) {
  // "{"a" 1}": the parser expects ':' and finds '1' at column 6.
  auto e = expect_config_error([] { ddpsim::core::parse_json_text(R"({"a" 1})", "one.json"); });
  EXPECT_TRUE(contains_all(e.what(), {"one.json:1:6"}));
}

TEST(JsonReader, ReadJsonFileParsesAndReportsSyntaxErrors) {
  TempDir tmp;
  const auto good = tmp.write("good.json", std::string(R"({"x": [1, 2, 3]})"));
  EXPECT_EQ(ddpsim::core::read_json_file(good.string())["x"].size(), 3u);

  const auto bad = tmp.write("bad.json", std::string("{\n  \"x\": [1, 2,,]\n}\n"));
  auto e = expect_config_error([&] { ddpsim::core::read_json_file(bad.string()); });
  // Line 2 is `  "x": [1, 2,,]`: the second ',' is at column 14.
  EXPECT_TRUE(contains_all(e.what(), {bad.string() + ":2:14"}));
}

TEST(JsonReader, MissingFileNamesFile) {
  TempDir tmp;
  const auto missing = (tmp.path() / "nope.json").string();
  auto e = expect_config_error([&] { ddpsim::core::read_json_file(missing); });
  EXPECT_TRUE(contains_all(e.what(), {missing, "cannot open"}));
}
