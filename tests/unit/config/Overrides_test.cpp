// Unit tests for `--set a.b.c=value` overrides (sim/config/overrides.*).
#include "config/overrides.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "support/builders.hpp"

using ddpsim::config::apply_overrides;
using ddpsim::config::parse_override_value;
using ddpsim::config::set_path;
using ddpsim::core::Json;
using ddpsim::test_support::contains_all;
using ddpsim::test_support::expect_config_error;

TEST(Overrides, ValueParsedAsJsonWhenItIsJson) {
  EXPECT_EQ(parse_override_value("50"), Json(50));
  EXPECT_EQ(parse_override_value("2.5"), Json(2.5));
  EXPECT_EQ(parse_override_value("true"), Json(true));
  EXPECT_EQ(parse_override_value("null"), Json(nullptr));
  EXPECT_EQ(parse_override_value(R"({"a": 1})"), Json({{"a", 1}}));
  EXPECT_EQ(parse_override_value(R"("quoted")"), Json("quoted"));
}

TEST(Overrides, ValueIsStringOtherwise) {
  EXPECT_EQ(parse_override_value("fp16_compress"), Json("fp16_compress"));
  EXPECT_EQ(parse_override_value("dgx-a100"), Json("dgx-a100"));
  EXPECT_EQ(parse_override_value("25MiB"), Json("25MiB"));
  EXPECT_EQ(parse_override_value(""), Json(""));
}

TEST(Overrides, SetsNestedValueCreatingObjects) {
  Json doc = Json::parse(R"({"ddp": {"bucket_cap_mb": 25}, "nodes": 2})");
  apply_overrides(doc, {"ddp.bucket_cap_mb=50", "training.optimizer=adamw", "nodes=4", "ddp.static_graph=true"});
  EXPECT_EQ(doc["ddp"]["bucket_cap_mb"], Json(50));
  EXPECT_EQ(doc["ddp"]["static_graph"], Json(true));
  EXPECT_EQ(doc["training"]["optimizer"], Json("adamw"));
  EXPECT_EQ(doc["nodes"], Json(4));
}

TEST(Overrides, LaterOverrideWins) {
  Json doc = Json::object();
  apply_overrides(doc, {"a.b=1", "a.b=2"});
  EXPECT_EQ(doc["a"]["b"], Json(2));
}

TEST(Overrides, ValueMayContainEquals) {
  Json doc = Json::object();
  apply_overrides(doc, {"description=x=y"});
  EXPECT_EQ(doc["description"], Json("x=y"));
}

TEST(Overrides, MissingEqualsIsRejected) {
  Json doc = Json::object();
  auto e = expect_config_error([&] { apply_overrides(doc, {"ddp.bucket_cap_mb"}); });
  EXPECT_TRUE(contains_all(e.what(), {"--set ddp.bucket_cap_mb", "expected PATH=VALUE", "ddp.bucket_cap_mb=50"}));
}

TEST(Overrides, EmptyPathIsRejected) {
  Json doc = Json::object();
  auto e = expect_config_error([&] { apply_overrides(doc, {"=5"}); });
  EXPECT_TRUE(contains_all(e.what(), {"--set =5", "expected PATH=VALUE"}));
}

TEST(Overrides, EmptyComponentIsRejected) {
  Json doc = Json::object();
  auto e = expect_config_error([&] { apply_overrides(doc, {"ddp..bucket_cap_mb=5"}); });
  EXPECT_TRUE(contains_all(e.what(), {"--set ddp..bucket_cap_mb=5", "empty component", "\"ddp..bucket_cap_mb\""}));
  auto e2 = expect_config_error([&] { apply_overrides(doc, {"ddp.=5"}); });
  EXPECT_TRUE(contains_all(e2.what(), {"empty component"}));
}

TEST(Overrides, SetPathRejectsEmptyPath) {
  Json doc = Json::object();
  auto e = expect_config_error([&] { set_path(doc, "", Json(1), "origin"); });
  EXPECT_TRUE(contains_all(e.what(), {"origin", "empty path"}));
}

TEST(Overrides, PathThroughNonObjectIsRejected) {
  Json doc = Json::parse(R"({"ddp": {"bucket_cap_mb": 25}, "model": "resnet50"})");
  auto e = expect_config_error([&] { apply_overrides(doc, {"ddp.bucket_cap_mb.x=1"}); });
  EXPECT_TRUE(
      contains_all(e.what(), {"--set ddp.bucket_cap_mb.x=1", "/ddp/bucket_cap_mb", "25", "not an object", "\"x\""}));
  auto e2 = expect_config_error([&] { apply_overrides(doc, {"model.name=foo"}); });
  EXPECT_TRUE(contains_all(e2.what(), {"/model", "\"resnet50\"", "not an object", "\"name\""}));
  // The document is left unchanged by the failed override.
  EXPECT_EQ(doc["ddp"]["bucket_cap_mb"], Json(25));
}

TEST(Overrides, RootMustBeAnObject) {
  Json doc = Json::array({1});
  auto e = expect_config_error([&] { apply_overrides(doc, {"a=1"}); });
  EXPECT_TRUE(contains_all(e.what(), {"--set a=1", "[1]", "not an object"}));
}
