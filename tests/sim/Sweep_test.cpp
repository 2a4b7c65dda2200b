// `ddpsim sweep` as a long-running job: children collected as they finish, progress on stderr,
// rows written as they finish, kill + --resume, --shard + merge, failures as rows.
#include "app/sweep.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "sim/cli_support.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;
using Clock = std::chrono::steady_clock;

std::string bin() {
  const char* b = std::getenv("DDPSIM_BIN");
  return b ? b : DDPSIM_BIN_PATH;
}

fs::path temp_dir(const std::string& name) { return testing::temp_dir("sweep-" + name); }

using testing::slurp;

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// A ddpsim process whose stderr lines are read as they come, each with the time it arrived.
class Proc {
 public:
  explicit Proc(const std::string& args, const fs::path& stdout_file = "/dev/null") {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe");
    start_ = Clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 2);
      int out = ::open(stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::close(fds[0]);
      ::close(fds[1]);
      std::string cmd = "exec " + bin() + " " + args;
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Proc() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0 && code_ == -2) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The next stderr line (without '\n'), or nullopt at EOF / after timeout_s.
  std::optional<std::string> next_line(double timeout_s = 120) {
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        if (testing::is_sanitizer_warning_line(l)) continue;  // the sanitizer build's runtime warning
        lines_.push_back(l);
        times_.push_back(std::chrono::duration<double>(Clock::now() - start_).count());
        return l;
      }
      int left = static_cast<int>(std::chrono::duration<double>(deadline - Clock::now()).count() * 1000);
      if (left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, left) <= 0) continue;
      char b[4096];
      ssize_t n = ::read(fd_, b, sizeof b);
      if (n <= 0) return std::nullopt;
      buf_.append(b, static_cast<size_t>(n));
    }
  }
  int wait() {
    while (next_line()) {
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code_;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  const std::vector<std::string>& lines() const { return lines_; }
  const std::vector<double>& times() const { return times_; }
  std::string all() const {
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int code_ = -2;
  std::string buf_;
  std::vector<std::string> lines_;
  std::vector<double> times_;
  Clock::time_point start_;
};

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Eight cheap points of ResNet-50 on two A100 nodes (analytic backend: ~0.1 s each).
const std::string kFast =
    "sweep resnet50-2x8-a100-hdr --set simulation.backend=analytic --param ddp.bucket_cap_mb=1,2,5,10,25,50,100,200";

TEST(SweepRunner, CollectsChildrenInCompletionOrder) {
  // Job 0 sleeps; with two at a time the three quick ones finish (and are reported) before it.
  std::vector<std::function<Json()>> work;
  work.push_back([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return Json(0);
  });
  for (int i = 1; i <= 3; ++i) work.push_back([i] { return Json(i); });
  std::vector<size_t> order;
  app::ChildEvents ev;
  ev.on_done = [&](size_t i, app::ChildResult r) {
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.value, static_cast<int>(i));
    order.push_back(i);
  };
  ASSERT_EQ(app::run_children(work, 2, ev), 0);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order.back(), 0u) << "the slow job was collected before quick ones that finished earlier";
}

TEST(SweepRunner, FailuresCarryMessageAndExitCode) {
  std::vector<std::function<Json()>> work{[]() -> Json { throw core::ConfigError("bad value here"); },
                                          []() -> Json { throw core::SimulationError("engine broke"); },
                                          []() -> Json {
                                            ::raise(SIGKILL);
                                            return Json(1);
                                          },
                                          [] { return Json("fine"); }};
  auto r = app::run_in_children(work, 2);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_FALSE(r[0].ok);
  EXPECT_EQ(r[0].exit_code, 2);
  EXPECT_EQ(r[0].error, "bad value here");
  EXPECT_EQ(r[1].exit_code, 1);
  EXPECT_EQ(r[1].error, "engine broke");
  EXPECT_EQ(r[2].exit_code, 128 + SIGKILL);
  EXPECT_TRUE(has(r[2].error, "killed by signal 9")) << r[2].error;
  EXPECT_TRUE(r[3].ok);
}

TEST(SweepParams, JsonListKeepsCommasAndRejectsDuplicates) {
  auto p = app::parse_sweep_param(R"(collective.NCCL_ALGO=["Ring,Tree","Ring"])");
  EXPECT_EQ(p.path, "collective.NCCL_ALGO");
  ASSERT_EQ(p.values.size(), 2u);
  EXPECT_EQ(p.values[0], "\"Ring,Tree\"");
  auto q = app::parse_sweep_param("ddp.bucket_cap_mb=[1, 2.5]");
  EXPECT_EQ(q.values, (std::vector<std::string>{"1", "2.5"}));
  EXPECT_THROW(app::parse_sweep_param("ddp.bucket_cap_mb=1,5,1"), core::ConfigError);
  EXPECT_THROW(app::parse_sweep_param("ddp.bucket_cap_mb=[1,"), core::ConfigError);
  EXPECT_THROW(app::parse_sweep_param("ddp.bucket_cap_mb=[]"), core::ConfigError);
}

TEST(SweepParams, ShardsPartitionThePoints) {
  std::vector<int> seen(10, 0);
  for (int k = 1; k <= 3; ++k)
    for (size_t i : app::shard_points(10, {k, 3})) ++seen[i];
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_THROW(app::parse_shard("0/3"), core::ConfigError);
  EXPECT_THROW(app::parse_shard("4/3"), core::ConfigError);
  EXPECT_THROW(app::parse_shard("1/x"), core::ConfigError);
  EXPECT_EQ(app::parse_shard("2/3").k, 2);
}

TEST(Sweep, ProgressWithinOneSecondAndAtEachPoint) {
  auto d = temp_dir("progress");
  Proc p(kFast + " -j 2 --out " + (d / "rows.jsonl").string());
  auto first = p.next_line(10);
  ASSERT_TRUE(first) << "no progress line";
  EXPECT_LT(p.times()[0], 1.0) << "first progress line after " << p.times()[0] << " s: " << *first;
  ASSERT_EQ(p.wait(), 0) << p.all();
  size_t finished = 0;
  for (const auto& l : p.lines())
    if (has(l, "finished point ")) ++finished;
  EXPECT_EQ(finished, 8u) << p.all();
  EXPECT_TRUE(has(p.all(), "sweep: 8/8 done, 0 failed")) << p.all();
  EXPECT_TRUE(has(p.all(), "ETA")) << p.all();
  // -q: nothing on stderr and no table on stdout (the rows go to --csv; without any output file
  // -q would warn that nothing is written: Cli.QuietSweepWithoutAnOutputFileWarnsThatNothingIsWritten).
  Proc q(kFast + " -q -j 2 --csv " + (d / "quiet.csv").string(), d / "quiet.txt");
  EXPECT_EQ(q.wait(), 0);
  EXPECT_TRUE(q.lines().empty()) << q.all();
  EXPECT_EQ(slurp(d / "quiet.txt"), "");
  EXPECT_NE(slurp(d / "quiet.csv").find("ddp.bucket_cap_mb"), std::string::npos);
  fs::remove_all(d);
}

TEST(Sweep, KilledAfterKPointsKeepsThemAndResumeEqualsUninterrupted) {
  auto d = temp_dir("resume");
  auto outs = [&](const std::string& tag) {
    return " --out " + (d / (tag + ".jsonl")).string() + " --csv " + (d / (tag + ".csv")).string() + " --json " +
           (d / (tag + ".json")).string();
  };
  // Not -q: its table is compared with the resumed run's (-q prints none).
  Proc whole(kFast + " -j 2" + outs("whole"), d / "whole.txt");
  ASSERT_EQ(whole.wait(), 0);
  for (int sig : {SIGTERM, SIGKILL}) {
    const std::string tag = sig == SIGTERM ? "term" : "kill";
    Proc p(kFast + " -j 1" + outs(tag));
    const size_t k = 3;
    size_t finished = 0;
    while (finished < k) {
      auto l = p.next_line(60);
      ASSERT_TRUE(l) << p.all();
      if (has(*l, "finished point ")) ++finished;
    }
    p.signal(sig);
    int code = p.wait();
    if (sig == SIGTERM) {
      EXPECT_EQ(code, 128 + SIGTERM) << p.all();
      EXPECT_TRUE(has(p.all(), "stopped by signal 15")) << p.all();
    }
    // Header + exactly the rows reported finished before the signal took effect.
    size_t done = 0;
    for (const auto& l : p.lines())
      if (has(l, "finished point ")) ++done;
    ASSERT_GE(done, k);
    ASSERT_LT(done, 8u) << "the sweep ended before the signal";
    std::string rows = slurp(d / (tag + ".jsonl"));
    EXPECT_EQ(count_lines(rows), done + 1) << rows;
    EXPECT_EQ(count_lines(slurp(d / (tag + ".csv"))), done + 1);
    Proc r(kFast + " -j 2 --resume" + outs(tag), d / (tag + ".txt"));
    ASSERT_EQ(r.wait(), 0) << r.all();
    EXPECT_TRUE(has(r.all(), std::to_string(done) + " already in")) << r.all();
    for (const char* ext : {".jsonl", ".csv", ".json", ".txt"})
      EXPECT_EQ(slurp(d / (tag + ext)), slurp(d / (std::string("whole") + ext))) << tag << ext;
  }
  // --resume against another sweep's rows is refused.
  Proc other("sweep resnet50-2x8-a100-hdr --param ddp.bucket_cap_mb=1,2 --resume --out " +
             (d / "whole.jsonl").string());
  EXPECT_EQ(other.wait(), 2);
  EXPECT_TRUE(has(other.all(), "holds rows of another sweep")) << other.all();
  fs::remove_all(d);
}

// Point 0 simulates every rank of 8 nodes for 10 steps (jitter): seconds; the others, one
// representative rank (their "steps" change nothing without jitter), take ~0.05 s each.
const std::string kOneSlow =
    "sweep resnet50-2x8-a100-hdr -j 2 --set simulation.backend=analytic --set nodes=8 "
    "--param 'stragglers=[{\"jitter_cv\":0.3,\"steps\":150},{\"steps\":1},{\"steps\":2},{\"steps\":3},"
    "{\"steps\":4},{\"steps\":5}]'";

TEST(Sweep, SlowPointDoesNotBlockTheOthers) {
  Proc p(kOneSlow);
  ASSERT_EQ(p.wait(), 0) << p.all();
  std::vector<std::string> finished;
  std::vector<double> at;
  for (size_t i = 0; i < p.lines().size(); ++i)
    if (has(p.lines()[i], "finished point ")) {
      finished.push_back(p.lines()[i]);
      at.push_back(p.times()[i]);
    }
  ASSERT_EQ(finished.size(), 6u) << p.all();
  // The five quick points are reported first, while the slow one (150 explicit-rank steps on 64
  // GPUs, about 2 s) still runs on the other core. Only the order is checked: on a loaded machine
  // the wall-clock ratio between the quick points and the slow one is not a property of the code.
  EXPECT_TRUE(has(finished.back(), "finished point 0 ")) << p.all();
  EXPECT_LE(at[4], at[5]) << p.all();
}

TEST(Sweep, ShardedThenMergedEqualsUnsharded) {
  auto d = temp_dir("shard");
  auto outs = [&](const std::string& tag) {
    return " --out " + (d / (tag + ".jsonl")).string() + " --csv " + (d / (tag + ".csv")).string() + " --json " +
           (d / (tag + ".json")).string();
  };
  Proc whole(kFast + " -j 2" + outs("whole"), d / "whole.txt");  // not -q: its table is compared
  ASSERT_EQ(whole.wait(), 0);
  std::string shards;
  for (int k = 1; k <= 3; ++k) {
    Proc s(kFast + " -q -j 2 --shard " + std::to_string(k) + "/3 --out " +
           (d / ("s" + std::to_string(k) + ".jsonl")).string());
    ASSERT_EQ(s.wait(), 0) << s.all();
    shards += " " + (d / ("s" + std::to_string(k) + ".jsonl")).string();
  }
  EXPECT_EQ(count_lines(slurp(d / "s1.jsonl")), 1u + 3u);  // points 0, 3, 6
  Proc m("merge" + shards + outs("merged"), d / "merged.txt");
  ASSERT_EQ(m.wait(), 0) << m.all();
  for (const char* ext : {".jsonl", ".csv", ".json", ".txt"})
    EXPECT_EQ(slurp(d / (std::string("merged") + ext)), slurp(d / (std::string("whole") + ext))) << ext;
  // A missing shard is named, not silently merged.
  Proc bad("merge " + (d / "s1.jsonl").string() + " " + (d / "s2.jsonl").string());
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "points have no row")) << bad.all();
  fs::remove_all(d);
}

TEST(Sweep, MergeRanksAsTheSweepAsked) {
  // merge takes the sweep's --metric, --group-by and --tolerance: with the same flags its outputs
  // equal the unsharded sweep's; without them the ranking (and the JSON's metric) is the default.
  auto d = temp_dir("merge-decide");
  const std::string decide = " --metric samples_per_s --tolerance 0 --group-by none";
  Proc whole(kFast + decide + " -q -j 2 --json " + (d / "whole.json").string());
  ASSERT_EQ(whole.wait(), 0) << whole.all();
  std::string shards;
  for (int k = 1; k <= 2; ++k) {
    Proc s(kFast + decide + " -q -j 2 --shard " + std::to_string(k) + "/2 --out " +
           (d / ("s" + std::to_string(k) + ".jsonl")).string());
    ASSERT_EQ(s.wait(), 0) << s.all();
    shards += " " + (d / ("s" + std::to_string(k) + ".jsonl")).string();
  }
  Proc same("merge -q" + shards + decide + " --json " + (d / "same.json").string());
  ASSERT_EQ(same.wait(), 0) << same.all();
  EXPECT_EQ(slurp(d / "same.json"), slurp(d / "whole.json"));
  Proc plain("merge -q" + shards + " --json " + (d / "plain.json").string());
  ASSERT_EQ(plain.wait(), 0) << plain.all();
  EXPECT_TRUE(has(slurp(d / "same.json"), "\"metric\": \"samples_per_s\"")) << slurp(d / "same.json");
  EXPECT_TRUE(has(slurp(d / "plain.json"), "\"metric\": \"step_time_s\"")) << slurp(d / "plain.json");
  // A bad ranking flag is refused before anything is written.
  Proc bad("merge" + shards + " --metric speed --json " + (d / "bad.json").string());
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "speed")) << bad.all();
  EXPECT_FALSE(fs::exists(d / "bad.json"));
  fs::remove_all(d);
}

TEST(Sweep, FailedPointIsARowAndTheExitCodeSaysSo) {
  // A child killed from outside (as the OOM killer would) becomes a row with its error.
  auto d = temp_dir("fail");
  Proc p("--log-level debug " + kOneSlow + " --out " + (d / "rows.jsonl").string() + " --csv " +
         (d / "rows.csv").string());
  pid_t victim = -1;
  while (auto l = p.next_line(60)) {
    auto at = l->find("child process ");
    if (at != std::string::npos && has(*l, "started for configuration 1 of")) {
      victim = std::stoi(l->substr(at + 14));
      ::kill(victim, SIGKILL);
      break;
    }
  }
  ASSERT_GT(victim, 0) << p.all();
  EXPECT_EQ(p.wait(), 4) << p.all();
  EXPECT_TRUE(has(p.all(), "1 of 6 points failed")) << p.all();
  auto j = app::read_journal((d / "rows.jsonl").string());
  ASSERT_EQ(j.rows.size(), 6u);
  EXPECT_EQ(j.rows.at(0)["exit_code"], 137);
  EXPECT_TRUE(has(j.rows.at(0)["error"].get<std::string>(), "killed by signal 9"));
  EXPECT_TRUE(j.rows.at(1).contains("step_time_s"));
  std::string csv = slurp(d / "rows.csv");
  EXPECT_TRUE(has(csv, ",137,child process killed by signal 9")) << csv;
  fs::remove_all(d);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Sweep, RecommendationNamesWhyTheBestWinsAndTheRuleOfThumb) {
  auto d = temp_dir("rec");
  // Batch 16 per GPU: communication outlasts the backward, so the caps' costs show (at the
  // scenario's 32 the fp16 backward hides 1 MiB's extra latency within the 3.4 % resolution).
  Proc p("sweep resnet50-2x8-a100-hdr --set training.batch_size=16 --param ddp.bucket_cap_mb=1,25,100 --json " +
             (d / "s.json").string(),
         d / "table.txt");
  ASSERT_EQ(p.wait(), 0) << p.all();
  Json j = Json::parse(slurp(d / "s.json"));
  const auto& rec = j["recommendation"];
  EXPECT_EQ(j["best"]["params"]["ddp.bucket_cap_mb"], 25);
  ASSERT_EQ(rec["losers"].size(), 2u);
  EXPECT_EQ(rec["losers"][0]["kind"], "latency-bound") << rec.dump(2);  // 1 MiB: 35 small all-reduces
  EXPECT_EQ(rec["losers"][1]["kind"], "overlap-bound") << rec.dump(2);  // 100 MiB: one bucket at the end
  ASSERT_EQ(rec["rule_of_thumb"].size(), 1u);
  EXPECT_EQ(rec["rule_of_thumb"][0]["inter_node_gbps"], 200.0);  // one HDR NIC per node
  EXPECT_EQ(rec["rule_of_thumb"][0]["range_mb"], Json::array({25.0, 50.0}));
  std::string table = slurp(d / "table.txt");
  EXPECT_TRUE(has(table, "why ddp.bucket_cap_mb=25 wins")) << table;
  EXPECT_TRUE(has(table, "simulated best 25 MB: within it")) << table;
  fs::remove_all(d);
}

TEST(Sweep, ExplicitCapsAreNotTheDefaultAndNullRunsIt) {
  // PyTorch 2.x: an explicit bucket_cap_mb is also the first bucket's cap, None keeps 1 MiB
  // (distributed.py bucket_bytes_cap_default). ResNet-50 on the default scenario: 5 buckets by
  // default, 4 with an explicit 25 (the 1 MiB first bucket is gone).
  auto d = temp_dir("capnull");
  Proc p("sweep default --param ddp.bucket_cap_mb=25 --json " + (d / "a.json").string(), d / "a.txt");
  ASSERT_EQ(p.wait(), 0) << p.all();
  EXPECT_TRUE(has(slurp(d / "a.txt"), "note: an explicit bucket_cap_mb also caps the first bucket"))
      << slurp(d / "a.txt");
  EXPECT_EQ(Json::parse(slurp(d / "a.json"))["rows"][0]["num_buckets"], 4);
  Proc q("sweep default --param ddp.bucket_cap_mb=null,25 --json " + (d / "b.json").string(), d / "b.txt");
  ASSERT_EQ(q.wait(), 0) << q.all();
  EXPECT_FALSE(has(slurp(d / "b.txt"), "note: an explicit")) << slurp(d / "b.txt");
  const Json rows = Json::parse(slurp(d / "b.json"))["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0]["params"]["ddp.bucket_cap_mb"].is_null());
  EXPECT_EQ(rows[0]["num_buckets"], 5);
  EXPECT_EQ(rows[1]["num_buckets"], 4);
  // FSDP ignores the cap: no note.
  Proc f("sweep llama3-8b-fsdp-8x-h100 --param ddp.bucket_cap_mb=25", d / "f.txt");
  ASSERT_EQ(f.wait(), 0) << f.all();
  EXPECT_FALSE(has(slurp(d / "f.txt"), "note: an explicit")) << slurp(d / "f.txt");
  fs::remove_all(d);
}

TEST(Sweep, RecommendationSaysWhenTheBestWinsOnCompute) {
  auto d = temp_dir("rec-compute");
  // One bucket plan, two memory formats: channels_last drops the convolutions' transposes, so the
  // other point loses on compute (its exposed communication differs far less).
  Proc p("sweep resnet50-2x8-a100-hdr --param training.memory_format=contiguous_format,channels_last --json " +
             (d / "s.json").string(),
         d / "table.txt");
  ASSERT_EQ(p.wait(), 0) << p.all();
  Json j = Json::parse(slurp(d / "s.json"));
  const auto& rec = j["recommendation"];
  EXPECT_EQ(j["best"]["params"]["training.memory_format"], "channels_last");
  ASSERT_EQ(rec["losers"].size(), 1u);
  EXPECT_EQ(rec["losers"][0]["kind"], "compute") << rec.dump(2);
  const auto& rows = j["rows"];
  const double dcomp = rows[0]["compute_only_s"].get<double>() - rows[1]["compute_only_s"].get<double>();
  const double dexp = rows[0]["exposed_comm_s"].get<double>() - rows[1]["exposed_comm_s"].get<double>();
  EXPECT_GT(dcomp, dexp);
  std::string table = slurp(d / "table.txt");
  EXPECT_TRUE(has(table, "wins: the least compute (compute only ")) << table;
  fs::remove_all(d);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

// Two node counts x three bucket caps of ResNet-50 on A100 nodes (analytic backend: quick).
const std::string kGrouped =
    "sweep resnet50-2x8-a100-hdr -q --set simulation.backend=analytic --param nodes=2,16 "
    "--param ddp.bucket_cap_mb=1,25,100";

Json sweep_json(const std::string& args, const fs::path& d, int expect_code = 0, std::string* table = nullptr) {
  Proc p(args + " --json " + (d / "s.json").string(), d / "table.txt");
  EXPECT_EQ(p.wait(), expect_code) << args << "\n" << p.all();
  if (table) *table = slurp(d / "table.txt");
  return expect_code == 0 ? Json::parse(slurp(d / "s.json")) : Json();
}

TEST(SweepDecide, BestPerNodeCountWhenNodesAreSwept) {
  auto d = temp_dir("group");
  Proc p(kGrouped.substr(0, kGrouped.find(" -q")) + kGrouped.substr(kGrouped.find(" -q") + 3) + " --json " +
             (d / "s.json").string(),
         d / "table.txt");  // without -q: the table
  ASSERT_EQ(p.wait(), 0) << p.all();
  const Json j = Json::parse(slurp(d / "s.json"));
  EXPECT_EQ(j["group_by"], "nodes");
  EXPECT_TRUE(j["best"].is_null());  // no single best across node counts
  ASSERT_EQ(j["groups"].size(), 2u);
  for (const auto& g : j["groups"]) {
    const int nodes = g["group"]["nodes"].get<int>();
    // The group's best is the least step time among its own rows (or it is flat).
    double least = 1e30;
    for (const auto& r : j["rows"])
      if (r["params"]["nodes"] == nodes) least = std::min(least, r["step_time_s"].get<double>());
    if (g["best"].is_null()) {
      EXPECT_GT(g["flat"].size(), 1u);
    } else {
      EXPECT_EQ(g["best"]["params"]["nodes"], nodes);
      EXPECT_EQ(g["best"]["step_time_s"].get<double>(), least);
    }
    // Every row a group's recommendation explains belongs to that group.
    for (const auto& l : g["recommendation"].value("losers", Json::array())) {
      const size_t point = l["point"].get<size_t>();
      EXPECT_EQ(j["rows"][point]["params"]["nodes"], nodes) << l.dump();
    }
  }
  const std::string table = slurp(d / "table.txt");
  EXPECT_TRUE(has(table, "compared by least step time per nodes")) << table;
  EXPECT_TRUE(has(table, "nodes=2: ")) << table;
  EXPECT_TRUE(has(table, "nodes=16: ")) << table;
  // --group-by none: one global ranking again, which the fewest nodes win on step time.
  const Json all = sweep_json(kGrouped + " --group-by none", d);
  ASSERT_TRUE(all["group_by"].is_null());
  ASSERT_EQ(all["groups"].size(), 1u);
  // A --group-by that is not swept is refused before any run.
  Proc bad("sweep resnet50-2x8-a100-hdr --param ddp.bucket_cap_mb=1,25 --group-by nodes");
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "--group-by nodes: not a swept parameter")) << bad.all();
  fs::remove_all(d);
}

TEST(SweepDecide, MetricsSamplesPerSecondAndCostFromTheRowsFigures) {
  auto d = temp_dir("metric");
  // p4d is priced (4.10 USD per GPU-hour, configs/clusters/p4d.json).
  const std::string base =
      "sweep default -q --set training.batch_size=8 --set cluster=p4d --set "
      "simulation.backend=analytic --param nodes=1,4 --group-by none";
  const Json sps = sweep_json(base + " --metric samples_per_s", d);
  EXPECT_EQ(sps["metric"], "samples_per_s");
  ASSERT_EQ(sps["rows"].size(), 2u);
  // 4 nodes do more samples per second than 1 (4x the GPUs); 1 node has the shorter step.
  EXPECT_GT(sps["rows"][1]["samples_per_s"].get<double>(), 1.01 * sps["rows"][0]["samples_per_s"].get<double>());
  EXPECT_EQ(sps["best"]["params"]["nodes"], 4);
  const Json st = sweep_json(base, d);
  ASSERT_EQ(st["rows"].size(), 2u);
  EXPECT_LT(st["rows"][0]["step_time_s"].get<double>(), st["rows"][1]["step_time_s"].get<double>());
  // Named only when the two differ by more than the basis resolves (else a tie: "best" null).
  if (!st["best"].is_null()) {
    EXPECT_EQ(st["best"]["params"]["nodes"], 1);
  }
  const Json cost = sweep_json(base + " --metric cost", d);
  for (const auto& r : cost["rows"]) {
    // price x GPUs x step / 3600 / (samples per GPU x GPUs) x 1e6, by hand.
    const double want = 4.10 * r["step_time_s"].get<double>() / 3600.0 / r["samples_per_rank"].get<double>() * 1e6;
    EXPECT_NEAR(r["cost_per_million_samples"].get<double>(), want, 1e-12 * want) << r.dump();
    EXPECT_EQ(r["price_source"], "rent");
  }
  // The cheapest per sample is the row with the least cost, and it is named unless flat.
  const auto& rows = cost["rows"];
  const size_t cheaper = rows[0]["cost_per_million_samples"] < rows[1]["cost_per_million_samples"] ? 0 : 1;
  if (!cost["best"].is_null()) {
    EXPECT_EQ(cost["best"]["point"], cheaper);
  }
  // Unpriced cluster: --metric cost is refused before any run, naming the cluster.
  Proc bad("sweep default --set cluster=dgx-a100 --param nodes=1,2 --metric cost");
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "cluster dgx-a100 has no price")) << bad.all();
  Proc badm("sweep default --param nodes=1,2 --metric speed");
  EXPECT_EQ(badm.wait(), 2);
  EXPECT_TRUE(has(badm.all(), "--metric speed")) << badm.all();
  fs::remove_all(d);
}

// As compare: a configuration that does not fit its GPU's memory is not the best while another
// fits (GPT-2 at 1,024 tokens on an H100: batch 32 needs 82 GiB, 16 fits), and when none
// fits the rows are ranked anyway and the text says so. A swept batch size, ranked by step time,
// gets a note that the least step time is the least work.
TEST(SweepDecide, ConfigurationsThatDoNotFitAreNotTheBest) {
  auto d = temp_dir("fit");
  const std::string base = "sweep --model gpt2 --cluster dgx-h100 --nodes 2 --set simulation.backend=analytic";
  std::string table;
  const Json j =
      sweep_json(base + " --param training.batch_size=32,16 --metric samples_per_s --tolerance 0", d, 0, &table);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_FALSE(j["rows"][0]["fits"].get<bool>());
  EXPECT_TRUE(j["rows"][1]["fits"].get<bool>());
  // Batch 32 has the more samples per second (less DDP and launch cost per sample) but does not fit.
  EXPECT_GT(j["rows"][0]["samples_per_s"].get<double>(), j["rows"][1]["samples_per_s"].get<double>());
  ASSERT_FALSE(j["best"].is_null()) << table;
  EXPECT_EQ(j["best"]["params"]["training.batch_size"], 16);
  EXPECT_TRUE(has(table, "(does not fit: excluded from best)")) << table;
  char needs[64];
  std::snprintf(needs, sizeof needs, "needs %.1f GiB per GPU",
                j["rows"][0]["memory_per_gpu_bytes"].get<double>() / (1ull << 30));
  EXPECT_TRUE(has(table,
                  "1 configuration(s) do not fit their GPU's memory: excluded from best "
                  "(training.batch_size=32 " +
                      std::string(needs) + ", the GPU has 80.0 GiB; would fit with training.batch_size <= "))
      << table;
  EXPECT_FALSE(has(table, "the least step time is the least work")) << table;  // ranked by throughput
  // Ranked by step time, the note.
  sweep_json(base + " --param training.batch_size=32,16", d, 0, &table);
  EXPECT_TRUE(has(table,
                  "note: training.batch_size changes the work in a step, so the least step time is the least "
                  "work; --metric samples_per_s ranks by throughput"))
      << table;
  // None fits: ranked anyway.
  const Json n = sweep_json(base + " --param ddp.bucket_cap_mb=1,100 --tolerance 0", d, 0, &table);
  ASSERT_FALSE(n["best"].is_null()) << table;
  const size_t least = n["rows"][0]["step_time_s"] < n["rows"][1]["step_time_s"] ? 0 : 1;
  EXPECT_EQ(n["best"]["point"], least);
  EXPECT_TRUE(has(table, "none of the configurations fits its GPU's memory: ranked anyway")) << table;
  EXPECT_FALSE(has(table, "excluded from best")) << table;
  fs::remove_all(d);
}

TEST(SweepDecide, DifferencesWithinTheToleranceAreFlatNotABest) {
  auto d = temp_dir("flat");
  // 25 MB and 25.001 MB make the same buckets of ResNet-50 (no layer falls between them): the
  // very same step, which must not be reported as one beating the other.
  std::string table;
  // Batch 16 per GPU, where 1 MiB is a real loss (above the resolution), as in the test above.
  const Json j = sweep_json(
      "sweep resnet50-2x8-a100-hdr -q --set training.batch_size=16 --set simulation.backend=analytic "
      "--param ddp.bucket_cap_mb=25,25.001,1",
      d, 0, &table);
  ASSERT_EQ(j["rows"][0]["step_time_s"], j["rows"][1]["step_time_s"]);
  EXPECT_TRUE(j["best"].is_null());
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["flat"], Json::array({0, 1}));
  // The rows' prediction band sets it: its resolution, 3.4 % (report/prediction.cpp).
  EXPECT_EQ(j["groups"][0]["tolerance"], 0.034);
  EXPECT_EQ(table, "");  // -q
  Proc p(
      "sweep resnet50-2x8-a100-hdr --set training.batch_size=16 --set simulation.backend=analytic "
      "--param ddp.bucket_cap_mb=25,25.001,1",
      d / "t.txt");
  ASSERT_EQ(p.wait(), 0) << p.all();
  table = slurp(d / "t.txt");
  EXPECT_TRUE(has(table, "flat: any of ddp.bucket_cap_mb=25, ddp.bucket_cap_mb=25.001 within 3.4 %")) << table;
  EXPECT_TRUE(has(table, "no single best")) << table;
  EXPECT_FALSE(has(table, "<- best")) << table;
  // A real difference d between 5 and 25 MB: flat under --tolerance above d, ranked below it.
  const Json two = sweep_json(
      "sweep resnet50-2x8-a100-hdr -q --set simulation.backend=analytic "
      "--param ddp.bucket_cap_mb=5,25",
      d);
  const double a = two["rows"][0]["step_time_s"].get<double>(), b = two["rows"][1]["step_time_s"].get<double>();
  const double rel = std::abs(a - b) / std::min(a, b);
  ASSERT_GT(rel, 1e-4);
  char above[32], below[32];
  std::snprintf(above, sizeof above, "%.6f", rel * 100 * 1.5);
  std::snprintf(below, sizeof below, "%.6f", rel * 100 * 0.5);
  const std::string s2 =
      "sweep resnet50-2x8-a100-hdr -q --set simulation.backend=analytic --param ddp.bucket_cap_mb=5,25";
  const Json flat = sweep_json(s2 + " --tolerance " + above, d);
  EXPECT_TRUE(flat["best"].is_null()) << rel;
  EXPECT_EQ(flat["groups"][0]["flat"].size(), 2u);
  const Json ranked = sweep_json(s2 + " --tolerance " + std::string(below) + "%", d);
  ASSERT_FALSE(ranked["best"].is_null()) << rel;
  EXPECT_EQ(ranked["best"]["point"], a < b ? 0 : 1);
  Proc bad(s2 + " --tolerance x");
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "--tolerance x: expected a percentage")) << bad.all();
  fs::remove_all(d);
}

TEST(SweepDecide, PlotAndHtmlLikeCompares) {
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0 &&
      std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no Python with matplotlib";
  auto d = temp_dir("plot");
  Proc p(kGrouped + " --plot " + (d / "s.png").string() + " --html " + (d / "s.html").string());
  ASSERT_EQ(p.wait(), 0) << p.all();
  const std::string png = slurp(d / "s.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  const std::string page = slurp(d / "s.html");
  EXPECT_TRUE(has(page, "data:image/png;base64,")) << page.substr(0, 400);
  EXPECT_TRUE(has(page, "decision per group")) << page.substr(0, 400);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    ++files;
    EXPECT_TRUE(e.path().filename() == "s.png" || e.path().filename() == "s.html") << e.path();  // no temporaries
  }
  EXPECT_EQ(files, 2u);
  Proc bad("sweep default --param nodes=1,2 --plot x.txt");
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_TRUE(has(bad.all(), "--plot x.txt: expected a file ending .png or .svg")) << bad.all();
  fs::remove_all(d);
}

}  // namespace
}  // namespace ddpsim
