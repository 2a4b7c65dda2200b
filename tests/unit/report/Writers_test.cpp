// Outputs are all-or-nothing, written through symlinks, and never replace what is not a file.
#include "report/writers.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "support/files.hpp"

namespace ddpsim::report {
namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return testing::temp_dir("writers-" + name); }

using testing::slurp;

TEST(Writers, OneBadPathLeavesNoneOfTheOutputs) {
  const auto d = fresh("partial");
  EXPECT_THROW(write_outputs({{(d / "a.json").string(), "a"}, {"/nonexistent/dir/b.json", "b"}}), core::ConfigError);
  EXPECT_THROW(write_outputs({{(d / "a.json").string(), "a"}, {d.string(), "b"}}), core::ConfigError);
  EXPECT_THROW(write_outputs({{(d / "a.json").string(), "a"}, {(d / "a.json").string(), "b"}}), core::ConfigError);
  EXPECT_TRUE(fs::is_empty(d));
  write_outputs({{(d / "a.json").string(), "a"}, {(d / "b.csv").string(), "b\n"}});
  EXPECT_EQ(slurp(d / "a.json"), "a\n");
  EXPECT_EQ(slurp(d / "b.csv"), "b\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 2);  // no temporaries left
}

TEST(Writers, SymlinksAreWrittenThrough) {
  const auto d = fresh("link");
  std::ofstream(d / "target") << "old";
  fs::create_symlink("target", d / "link");
  write_output((d / "link").string(), "new");
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(slurp(d / "target"), "new\n");
  fs::create_symlink("made", d / "dangling");
  write_output((d / "dangling").string(), "x");
  EXPECT_TRUE(fs::is_symlink(d / "dangling"));
  EXPECT_EQ(slurp(d / "made"), "x\n");
}

TEST(Writers, FifosAndDevicesAreRefusedAndKept) {
  const auto d = fresh("fifo");
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  try {
    write_output((d / "fifo").string(), "x");
    ADD_FAILURE();
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(d / "fifo"));
  fs::create_symlink("fifo", d / "to-fifo");
  EXPECT_THROW(write_output((d / "to-fifo").string(), "x"), core::ConfigError);
  EXPECT_TRUE(fs::is_fifo(d / "fifo"));
}

TEST(Writers, NonFiniteNumbersAreNotWrittenAsNull) {
  core::Json j = {{"rows", {{{"t", 1.0}}, {{"t", std::nan("")}}}}};
  try {
    json_text(j, 2, "report");
    ADD_FAILURE();
  } catch (const core::SimulationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "report: /rows/1/t is not a finite number (NaN or infinity); nothing is written rather than null");
  }
  EXPECT_EQ(json_text(core::Json{{"a", 1}}, -1, "x"), "{\"a\":1}");
}

}  // namespace
}  // namespace ddpsim::report
