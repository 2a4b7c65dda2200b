// training.wrapper "fsdp" through the command line: the fit of Llama 3 8B on one DGX H100, the
// per-unit report fields (sizes by hand), sweeps over the FSDP settings, bad values and warnings.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <tuple>

#include "core/json_reader.hpp"
#include "sim/cli_support.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

using core::Json;

testing::CliResult run(const std::string& args) { return testing::run_cli(args); }

// The JSON a run printed on stdout (run_cli's `out` is stdout followed by stderr).
Json stdout_json(const testing::CliResult& r) { return Json::parse(r.out.substr(0, r.out.size() - r.err.size())); }

// Llama 3 8B: 32 blocks of 218,112,000 parameters (wq, wo 4096 x 4096; wk, wv 1024 x 4096; w1, w2,
// w3 4096 x 14336; two norms of 4096); every dim 0 divides by 8, so FSDP2 pads nothing.
constexpr double kBlock = 218112000.0;

TEST(FsdpCli, Llama3FitsOnOneDgxH100UnderFullShardAndNotUnderDdp) {
  auto r = run("run llama3-8b-fsdp-8x-h100 --json - -q");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  EXPECT_TRUE(j["fits"].get<bool>()) << j["memory"].dump();
  EXPECT_EQ(j["activation_checkpointing"], "full");
  ASSERT_EQ(j["fsdp_units"].size(), 33u);  // the root and 32 blocks
  const auto& u = j["fsdp_units"][1];
  EXPECT_EQ(u["name"], "layers.0");
  EXPECT_EQ(u["allgathers"], 2);                                             // before its forward and its backward
  EXPECT_DOUBLE_EQ(u["allgather_bytes"].get<double>(), 2 * kBlock / 8 * 2);  // bf16 shards, per rank
  EXPECT_DOUBLE_EQ(u["reduce_bytes"].get<double>(), kBlock * 4);             // fp32 gradient in, per rank
  EXPECT_EQ(j["memory"]["fsdp_shards"], 8);
  auto d = run("run llama3-8b-fsdp-8x-h100 --set training.wrapper=ddp --json - -q");
  ASSERT_EQ(d.code, 0) << d.out;
  // stdout only: the warning that it does not fit is on stderr (out holds stdout, then stderr).
  EXPECT_FALSE(stdout_json(d)["fits"].get<bool>());
  EXPECT_NE(d.err.find("per GPU at its peak"), std::string::npos) << d.err;
}

TEST(FsdpCli, BadFsdpValuesExitTwoWithPathValueAndAllowed) {
  auto r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.sharding_strategy=FULL -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/sharding_strategy", "HYBRID_SHARD"}));
  r = run("run llama3-8b-fsdp-8x-h100 --set training.activation_checkpointing=most -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/activation_checkpointing"}));
  r = run(
      "run llama3-8b-fsdp-8x-h100 --set training.fsdp.version=1 --set training.fsdp.reshard_after_forward=false -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/reshard_after_forward"}));
  r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.no_sync=3 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/no_sync", "3 is not allowed", "true or false"}));
}

// FSDP2 explicit prefetching (training.fsdp.num_to_forward_prefetch / num_to_backward_prefetch) on
// a communication-bound cluster (8 HGX A100 nodes, one HDR NIC each): the same collectives (comm
// alone equal to the last bit) issued earlier, so the compute waits less for all-gathers; the one
// NCCL stream stays busy, so the backward waits for the reduce-scatters instead (post_backward's
// reduce_scatter_state). Memory: two more blocks unsharded (bf16, 2 x 218,112,000 x 2 B). The units'
// exposed parts add up to the report's comm_exposed_s.
TEST(FsdpCli, ExplicitPrefetchIssuesAllGathersEarlierAndHoldsMoreUnits) {
  const std::string base = "run llama3-8b-fsdp-8x-h100 --set cluster=hgx-a100-1hdr --set nodes=8 --json - -q";
  auto a = run(base);
  auto b = run(base + " --set training.fsdp.num_to_forward_prefetch=2 --set training.fsdp.num_to_backward_prefetch=2");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  const Json ja = Json::parse(a.out), jb = Json::parse(b.out);
  EXPECT_EQ(ja["comm_alone_s"], jb["comm_alone_s"]);
  EXPECT_LT(jb["allgather_wait_s"].get<double>(), ja["allgather_wait_s"].get<double>());
  EXPECT_GT(ja["reduce_wait_s"].get<double>(), 0.0);
  EXPECT_GT(jb["reduce_wait_s"].get<double>(), ja["reduce_wait_s"].get<double>());
  EXPECT_DOUBLE_EQ(jb["memory"]["unsharded_params"].get<double>() - ja["memory"]["unsharded_params"].get<double>(),
                   2 * kBlock * 2);
  EXPECT_EQ(jb["memory"]["unsharded_units"].get<int>() - ja["memory"]["unsharded_units"].get<int>(), 2);
  for (const Json* j : {&ja, &jb}) {
    double sum = 0;
    for (const auto& u : (*j)["fsdp_units"])
      sum += u["allgather_exposed_s"].get<double>() + u["reduce_exposed_s"].get<double>();
    EXPECT_NEAR(sum, (*j)["comm_exposed_s"].get<double>(), 1e-9);
    EXPECT_NEAR((*j)["comm_exposed_s"].get<double>(),
                (*j)["allgather_wait_s"].get<double>() + (*j)["reduce_wait_s"].get<double>() +
                    (*j)["finalize_wait_s"].get<double>(),
                1e-9);
  }
  auto r =
      run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.version=1 --set training.fsdp.num_to_forward_prefetch=2 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/num_to_forward_prefetch", "2 with version 1",
                                        "set_modules_to_forward_prefetch", "version 2"}));
  r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.num_to_backward_prefetch=-1 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/num_to_backward_prefetch", "-1"}));
  r =
      run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.num_to_backward_prefetch=2 "
          "--set training.fsdp.reshard_after_forward=false -q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("num_to_backward_prefetch 2 changes nothing"), std::string::npos) << r.out;
}

// HYBRID_SHARD's replica all-reduce crosses the network whatever the node count: with as many
// nodes as GPUs per node (8 x 8) the replica group has the shard group's size, and it was once
// timed as one node's NVLink all-reduce (3.3 ms a block at 8 nodes against 6.5 at 4 and 7.6 at 16).
// One GPU per node over more nodes is never faster.
TEST(FsdpCli, HybridShardReplicaAllReduceGrowsWithTheNodes) {
  double last = 0;
  for (int nodes : {2, 4, 8, 16}) {
    auto r = run("run llama3-8b-fsdp-8x-h100 --set nodes=" + std::to_string(nodes) +
                 " --set training.fsdp.sharding_strategy=HYBRID_SHARD --json - -q");
    ASSERT_EQ(r.code, 0) << r.out;
    const double reduce = stdout_json(r)["fsdp_units"][1]["reduce_alone_s"].get<double>();
    EXPECT_GE(reduce, last) << nodes << " nodes";
    last = reduce;
  }
}

// FSDP2 reshard_after_forward 8 on 8 nodes x 8 H100s: the forward all-gathers over all 64 GPUs,
// the backward over the 8 GPUs of each node (the post-forward group: 8 consecutive ranks), the
// same 8-GPU all-gather of the same unit as a one-node run's. So a block's all-gather time is half
// the 64-GPU run's (its forward) plus half the one-node run's (each of its two is over those 8
// GPUs). In float32 (param_dtype float32): then the backward's copy-in of the post-forward shard
// moves the bytes a one-node shard's copy-in does (bf16 would skip the shards' cast: 20 us less).
// Memory lies between true and false; bad values exit 2, 1 and 64 are warned.
TEST(FsdpCli, ReshardAfterForwardToOneNode) {
  const auto unit_gather = [&](const std::string& sets) {
    auto r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.param_dtype=float32 " + sets + " --json - -q");
    EXPECT_EQ(r.code, 0) << r.out;
    const Json j = stdout_json(r);
    return std::make_pair(j["fsdp_units"][1]["allgather_alone_s"].get<double>(),
                          j["memory_per_gpu_bytes"].get<double>());
  };
  const auto [all, mem_all] = unit_gather("--set nodes=8");
  const auto [node, mem_node] = unit_gather("");
  const auto [to8, mem_to8] = unit_gather("--set nodes=8 --set training.fsdp.reshard_after_forward=8");
  const auto [kept, mem_kept] = unit_gather("--set nodes=8 --set training.fsdp.reshard_after_forward=false");
  EXPECT_NEAR(to8, all / 2 + node / 2, 1e-9 * to8);
  EXPECT_LT(to8, all);
  EXPECT_GT(mem_to8, mem_all);
  EXPECT_LT(mem_to8, mem_kept);
  EXPECT_GT(kept, 0);
  (void)mem_node;
  for (const char* bad : {"12", "3", "2.5", "\"x\""}) {
    auto r =
        run("run llama3-8b-fsdp-8x-h100 --set nodes=8 --set training.fsdp.reshard_after_forward=" + std::string(bad) +
            " -q");
    EXPECT_TRUE(testing::refused_with(r, {"/training/fsdp/reshard_after_forward"})) << bad << r.out;
  }
  // 12 divides 24 GPUs (3 nodes) but would hold one and a half nodes.
  auto part = run("run llama3-8b-fsdp-8x-h100 --set nodes=3 --set training.fsdp.reshard_after_forward=12 -q");
  EXPECT_TRUE(testing::refused_with(part, {"/training/fsdp/reshard_after_forward", "part of a node"})) << part.out;
  auto v1 =
      run("run llama3-8b-fsdp-8x-h100 --set nodes=8 --set training.fsdp.version=1 "
          "--set training.fsdp.reshard_after_forward=8 -q");
  EXPECT_TRUE(testing::refused_with(v1, {"/training/fsdp/reshard_after_forward", "version 1"})) << v1.out;
  auto sgo =
      run("run llama3-8b-fsdp-8x-h100 --set nodes=8 --set training.fsdp.sharding_strategy=SHARD_GRAD_OP "
          "--set training.fsdp.reshard_after_forward=8 -q");
  EXPECT_TRUE(testing::refused_with(sgo, {"/training/fsdp/reshard_after_forward", "8 with sharding_strategy"}))
      << sgo.out;
  auto one = run("run llama3-8b-fsdp-8x-h100 --set nodes=8 --set training.fsdp.reshard_after_forward=1 -q");
  EXPECT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.err.find("the same as false"), std::string::npos) << one.err;
  auto whole = run("run llama3-8b-fsdp-8x-h100 --set nodes=8 --set training.fsdp.reshard_after_forward=64 -q");
  EXPECT_EQ(whole.code, 0) << whole.out;
  EXPECT_NE(whole.err.find("the same as true"), std::string::npos) << whole.err;
}

TEST(FsdpCli, HybridShardOnOneNodeIsWarned) {
  auto r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.sharding_strategy=HYBRID_SHARD -q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HYBRID_SHARD on one node"), std::string::npos) << r.out;
}

// FSDP groups its collectives by unit; DDP's bucket settings change nothing, and the run says so.
TEST(FsdpCli, DdpOnlyKeysAreWarnedAndChangeNothing) {
  auto plain = run("run llama3-8b-fsdp-8x-h100 --json - -q");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.err.find("DistributedDataParallel's"), std::string::npos) << plain.err;
  auto keyed =
      run("run llama3-8b-fsdp-8x-h100 --set ddp.bucket_cap_mb=5 --set ddp.find_unused_parameters=true --json - -q");
  ASSERT_EQ(keyed.code, 0) << keyed.out;
  EXPECT_NE(keyed.err.find("ddp.bucket_cap_mb, ddp.find_unused_parameters are DistributedDataParallel's and "
                           "ignored with training.wrapper \"fsdp\""),
            std::string::npos)
      << keyed.err;
  EXPECT_EQ(stdout_json(plain)["step_time_s"], stdout_json(keyed)["step_time_s"]);
}

// The mirror image: training.fsdp set without training.wrapper "fsdp" still runs DDP (a user who
// writes --set training.fsdp.sharding_strategy=FULL_SHARD alone gets a DDP step), and says so.
TEST(FsdpCli, FsdpKeysUnderDdpAreWarnedAndChangeNothing) {
  auto plain = run("run default --json - -q");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.err.find("FullyShardedDataParallel's"), std::string::npos) << plain.err;
  auto keyed =
      run("run default --set training.fsdp.sharding_strategy=FULL_SHARD --set training.fsdp.version=1 "
          "--set training.data_parallel.nccl=false --json - -q");
  ASSERT_EQ(keyed.code, 0) << keyed.out;
  EXPECT_NE(keyed.err.find("training.fsdp.sharding_strategy, training.fsdp.version are FullyShardedDataParallel's "
                           "and ignored with training.wrapper \"ddp\": set training.wrapper \"fsdp\""),
            std::string::npos)
      << keyed.err;
  EXPECT_NE(keyed.err.find("training.data_parallel.nccl is DataParallel's and ignored with training.wrapper \"ddp\""),
            std::string::npos)
      << keyed.err;
  EXPECT_EQ(stdout_json(plain)["step_time_s"], stdout_json(keyed)["step_time_s"]);
  // Under FSDP the same keys are its own: no such warning.
  auto fsdp = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.version=1 -q");
  ASSERT_EQ(fsdp.code, 0) << fsdp.out;
  EXPECT_EQ(fsdp.err.find("FullyShardedDataParallel's"), std::string::npos) << fsdp.err;
}

// A run that does not fit says what would: the largest batch per GPU (checked by running it and
// the next one), full checkpointing and FSDP, each alone. GPT-2 at batch 32 x 1,024 tokens needs
// 82 GiB of an H100's 80.
TEST(FsdpCli, ARunThatDoesNotFitSaysWhatWould) {
  auto r = run("run --model gpt2 --cluster dgx-h100 --nodes 2 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = stdout_json(r);
  ASSERT_FALSE(j["fits"].get<bool>());
  const Json& f = j["fit_options"];
  ASSERT_TRUE(f.is_object()) << j.dump();
  const int b = f["largest_batch"].get<int>();
  ASSERT_GT(b, 1);
  ASSERT_LT(b, 32);
  EXPECT_NE(r.err.find("would fit with training.batch_size <= " + std::to_string(b)), std::string::npos) << r.err;
  const auto fits_at = [&](int batch) {
    auto x = run("run --model gpt2 --cluster dgx-h100 --nodes 2 --set training.batch_size=" + std::to_string(batch) +
                 " --json - -q");
    EXPECT_EQ(x.code, 0) << x.out;
    const Json jx = stdout_json(x);
    EXPECT_TRUE(jx["fit_options"].is_null() == jx["fits"].get<bool>());
    return std::make_pair(jx["fits"].get<bool>(), jx["memory_per_gpu_bytes"].get<double>());
  };
  const auto at_b = fits_at(b);
  EXPECT_TRUE(at_b.first);
  EXPECT_DOUBLE_EQ(at_b.second, f["largest_batch_bytes"].get<double>());
  EXPECT_FALSE(fits_at(b + 1).first);
  // Full checkpointing as the run itself reports it.
  auto c =
      run("run --model gpt2 --cluster dgx-h100 --nodes 2 --set training.activation_checkpointing=full --json - -q");
  ASSERT_EQ(c.code, 0) << c.out;
  const Json jc = stdout_json(c);
  EXPECT_DOUBLE_EQ(jc["memory_per_gpu_bytes"].get<double>(), f["activation_checkpointing_full_bytes"].get<double>());
  // FSDP likewise (its activations are DDP's: it does not fit either, and the text says so).
  auto s = run("run --model gpt2 --cluster dgx-h100 --nodes 2 --set training.wrapper=fsdp --json - -q");
  ASSERT_EQ(s.code, 0) << s.out;
  const Json js = stdout_json(s);
  EXPECT_DOUBLE_EQ(js["memory_per_gpu_bytes"].get<double>(), f["fsdp_bytes"].get<double>());
  EXPECT_NE(r.err.find("not with training.wrapper fsdp"), std::string::npos) << r.err;
  // The report's text says the same as the warning, and compare's memory note carries it.
  const std::string text = f["text"].get<std::string>();
  EXPECT_EQ(text.rfind("would fit with training.batch_size <= " + std::to_string(b) + " (", 0), 0u) << text;
  EXPECT_NE(r.err.find("; " + text + " (see"), std::string::npos) << r.err;
  auto k = run("compare --model gpt2 --cluster dgx-h100 --nodes 2 -q");
  ASSERT_EQ(k.code, 0) << k.out;
  char needs[64];
  std::snprintf(needs, sizeof needs, "needs %.1f GiB per GPU",
                stdout_json(r)["memory_per_gpu_bytes"].get<double>() / (1ull << 30));
  EXPECT_NE(k.out.find(std::string(needs) + ", the GPU has 80.0 GiB; " + text), std::string::npos) << k.out;
}

// Gradient accumulation under FSDP: with no_sync (the default) every micro-step all-gathers and
// only the last reduces, so the communication alone of two micro-steps is the all-gathers twice
// and the reduce-scatters once; without it, twice everything. FSDP1 SHARD_GRAD_OP under no_sync
// keeps its parameters unsharded between micro-steps, so two micro-steps communicate what one does.
TEST(FsdpCli, GradientAccumulationWithAndWithoutNoSync) {
  const auto comm = [&](const std::string& sets) {
    auto r = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.version=1 " + sets + " --json - -q");
    EXPECT_EQ(r.code, 0) << r.out;
    const Json j = stdout_json(r);
    double gather = 0, reduce = 0;
    for (const auto& u : j["fsdp_units"]) {
      gather += u["allgather_alone_s"].get<double>();
      reduce += u["reduce_alone_s"].get<double>();
    }
    return std::make_tuple(j["comm_alone_s"].get<double>(), gather, reduce);
  };
  const auto [one, g1, r1] = comm("");
  ASSERT_GT(g1, 0);
  ASSERT_GT(r1, 0);
  EXPECT_NEAR(one, g1 + r1, 1e-9 * one);
  const auto [quiet, gq, rq] = comm("--set training.gradient_accumulation_steps=2");
  EXPECT_NEAR(quiet, 2 * g1 + r1, 1e-9 * quiet);
  // The unit rows cover the whole optimizer step: both micro-steps' all-gathers, one reduction.
  EXPECT_NEAR(gq, 2 * g1, 1e-9 * gq);
  EXPECT_NEAR(rq, r1, 1e-9 * rq);
  const auto [each, ge, re] = comm("--set training.gradient_accumulation_steps=2 --set training.fsdp.no_sync=false");
  EXPECT_NEAR(each, 2 * (g1 + r1), 1e-9 * each);
  EXPECT_NEAR(re, 2 * r1, 1e-9 * re);
  const std::string sgo = "--set training.fsdp.sharding_strategy=SHARD_GRAD_OP ";
  const auto [sgo1, gs1, rs1] = comm(sgo);
  const auto [sgo2, gs2, rs2] = comm(sgo + "--set training.gradient_accumulation_steps=2");
  EXPECT_NEAR(sgo2, sgo1, 1e-9 * sgo1);
  EXPECT_NEAR(gs2, gs1, 1e-9 * gs1);
  const auto [sgo_each, gse, rse] =
      comm(sgo + "--set training.gradient_accumulation_steps=2 --set training.fsdp.no_sync=false");
  EXPECT_NEAR(sgo_each, 2 * sgo1, 1e-9 * sgo_each);
}

// FSDP2 set_reshard_after_backward(is_last) (training.fsdp.reshard_after_backward false): with two
// micro-steps each block is all-gathered three times a step (both forwards but the second, both
// backwards) and the root once; with reshard_after_forward false too, once each. More memory,
// less communication. One micro-step is warned of (nothing changes), version 1 refused.
TEST(FsdpCli, ReshardAfterBackwardFalseSkipsTheNextForwardsAllGathers) {
  const auto step = [&](const std::string& sets) {
    auto r = run("run llama3-8b-fsdp-8x-h100 --set training.gradient_accumulation_steps=2 " + sets + " --json - -q");
    EXPECT_EQ(r.code, 0) << r.out;
    return stdout_json(r);
  };
  const Json base = step("");
  const Json kept = step("--set training.fsdp.reshard_after_backward=false");
  const Json none =
      step("--set training.fsdp.reshard_after_backward=false --set training.fsdp.reshard_after_forward=false");
  ASSERT_EQ(kept["fsdp_units"].size(), 33u);
  EXPECT_EQ(base["fsdp_units"][0]["allgathers"], 2);
  EXPECT_EQ(base["fsdp_units"][1]["allgathers"], 4);
  EXPECT_EQ(kept["fsdp_units"][0]["allgathers"], 1);
  EXPECT_EQ(kept["fsdp_units"][1]["allgathers"], 3);
  EXPECT_EQ(none["fsdp_units"][1]["allgathers"], 1);
  EXPECT_LT(kept["comm_alone_s"].get<double>(), base["comm_alone_s"].get<double>());
  EXPECT_GT(kept["memory_per_gpu_bytes"].get<double>(), base["memory_per_gpu_bytes"].get<double>());
  auto one = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.reshard_after_backward=false --json - -q");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.err.find("reshard_after_backward false with gradient_accumulation_steps 1 changes nothing"),
            std::string::npos)
      << one.err;
  auto plain = run("run llama3-8b-fsdp-8x-h100 --json - -q");
  EXPECT_EQ(stdout_json(one)["step_time_s"], stdout_json(plain)["step_time_s"]);
  auto v1 = run(
      "run llama3-8b-fsdp-8x-h100 --set training.fsdp.version=1 --set training.fsdp.reshard_after_backward=false -q");
  EXPECT_TRUE(testing::refused_with(v1, {"/training/fsdp/reshard_after_backward", "version 2"})) << v1.out;
}

// A sweep over FSDP settings explains itself in FSDP's terms (units, all-gather waits), not DDP's
// buckets, and shows the memory each configuration needs where that differs.
TEST(FsdpCli, SweepOfReshardingShowsMemoryAndNoBuckets) {
  auto r =
      run("sweep llama3-8b-fsdp-8x-h100 --set training.gradient_accumulation_steps=2 --param "
          "training.fsdp.reshard_after_backward=true,false");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("memory/GPU"), std::string::npos) << r.out;
  // The first row's memory as `run` computes it for the same configuration.
  auto first =
      run("run llama3-8b-fsdp-8x-h100 --set training.gradient_accumulation_steps=2 --set "
          "training.fsdp.reshard_after_backward=true --json - -q");
  ASSERT_EQ(first.code, 0) << first.err;
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.2f GiB", stdout_json(first)["memory_per_gpu_bytes"].get<double>() / (1 << 30));
  EXPECT_NE(r.out.find(gib), std::string::npos) << gib << "\n" << r.out;
  EXPECT_NE(r.out.find("FSDP units overlap their collectives"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all-gather waits"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0 buckets"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the last bucket"), std::string::npos) << r.out;
}

TEST(FsdpCli, SweepOverStrategyAndCheckpointing) {
  const auto d = testing::temp_dir("fsdp-sweep");
  const auto out = (d / "s.json").string();
  auto r =
      run("sweep gpt2-4x8-h100-ndr --set training.wrapper=fsdp --param "
          "training.fsdp.sharding_strategy=FULL_SHARD,HYBRID_SHARD,NO_SHARD --param "
          "training.activation_checkpointing=none,full --json " +
          out);
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(testing::slurp(out));
  ASSERT_EQ(j["rows"].size(), 6u);
  // Full checkpointing recomputes the forward: slower than none with the other settings equal.
  for (size_t i = 0; i < 6; i += 2) {
    EXPECT_EQ(j["rows"][i]["params"]["training.activation_checkpointing"], "none");
    EXPECT_EQ(j["rows"][i + 1]["params"]["training.activation_checkpointing"], "full");
    EXPECT_GT(j["rows"][i + 1]["step_time_s"].get<double>(), j["rows"][i]["step_time_s"].get<double>()) << i;
  }
  std::filesystem::remove_all(d);
}

// CPU offload on the bundled Llama 3 8B scenario: the shards go to the host (the GPU holds no
// parameter shard or optimizer state: less memory per GPU), each step copies every shard in (the
// root once, each block twice: fp32, 1/8 of the model each) and every gradient shard out (fp32),
// and the optimizer runs on the CPU with the GPU idle, so the step is longer by at least that
// step less the GPU optimizer's. The band carries the CPU part. Settings it does not model are
// refused with their path.
TEST(FsdpCli, CpuOffloadMovesShardsToTheHostAndTheOptimizerToTheCpu) {
  auto base = run("run llama3-8b-fsdp-8x-h100 --json - -q");
  auto off = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true --json - -q");
  ASSERT_EQ(base.code, 0) << base.out;
  ASSERT_EQ(off.code, 0) << off.out;
  const Json b = stdout_json(base), o = stdout_json(off);
  ASSERT_TRUE(o.contains("fsdp_offload")) << o.dump();
  EXPECT_FALSE(b.contains("fsdp_offload"));
  const auto& f = o["fsdp_offload"];
  const double shard_bytes = kBlock / 8 * 4;  // one block's fp32 shard per rank
  // d2h: every unit's gradient shard once; the 32 blocks alone are 32 shards.
  EXPECT_GT(f["d2h_bytes"].get<double>(), 32 * shard_bytes);
  // h2d: the blocks twice, the root (embeddings, norm, output) once: 2 x d2h less the root's shard.
  const double root = f["d2h_bytes"].get<double>() - 32 * shard_bytes;
  EXPECT_DOUBLE_EQ(f["h2d_bytes"].get<double>(), 2 * 32 * shard_bytes + root);
  EXPECT_EQ(f["h2d_copies"], 65);
  EXPECT_DOUBLE_EQ(o["memory"]["parameters"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(o["memory"]["optimizer_state"].get<double>(), 0.0);
  // Host: per element of the rank's shard, the fp32 shard, its fp32 gradient and AdamW's two states.
  EXPECT_DOUBLE_EQ(o["memory"]["host_offload"].get<double>(), f["d2h_bytes"].get<double>() / 4 * 16);
  EXPECT_LT(o["memory_per_gpu_bytes"].get<double>(),
            b["memory_per_gpu_bytes"].get<double>() - b["memory"]["optimizer_state"].get<double>());
  const double cpu = f["cpu_step_s"].get<double>();
  EXPECT_GT(cpu, 0.0);
  EXPECT_GT(o["step_time_s"].get<double>(), b["step_time_s"].get<double>() + cpu - b["optimizer_s"].get<double>());
  bool part = false;
  for (const auto& p : o["prediction"]["parts"]) part = part || p["part"] == "cpu_optimizer";
  EXPECT_TRUE(part) << o["prediction"].dump();
  EXPECT_NE(o["prediction"]["basis"].get<std::string>().find("CPU optimizer"), std::string::npos);
  auto text = run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true");
  EXPECT_NE(text.out.find("CPU offload per step: shards to GPU"), std::string::npos) << text.out;

  // Two micro-steps under no_sync: every micro-step copies the shards in again (FULL_SHARD reshards
  // after each backward), only the last reduces and copies its gradient shards out, the CPU steps
  // once; the accumulated unsharded gradients stay on the GPU as without offload.
  auto acc = run(
      "run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true --set training.gradient_accumulation_steps=2 "
      "--json - -q");
  auto acc_gpu = run("run llama3-8b-fsdp-8x-h100 --set training.gradient_accumulation_steps=2 --json - -q");
  ASSERT_EQ(acc.code, 0) << acc.out;
  ASSERT_EQ(acc_gpu.code, 0) << acc_gpu.out;
  const Json a = Json::parse(acc.out), ag = Json::parse(acc_gpu.out);
  const auto& fa = a["fsdp_offload"];
  EXPECT_EQ(fa["h2d_copies"], 130);
  EXPECT_DOUBLE_EQ(fa["h2d_bytes"].get<double>(), 2 * f["h2d_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(fa["d2h_bytes"].get<double>(), f["d2h_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(fa["cpu_step_s"].get<double>(), cpu);
  EXPECT_DOUBLE_EQ(a["memory"]["gradients"].get<double>(), ag["memory"]["gradients"].get<double>());
  EXPECT_DOUBLE_EQ(a["memory"]["parameters"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(a["memory"]["optimizer_state"].get<double>(), 0.0);
  for (const char* version : {"1", "2"}) {
    auto every = run(std::string("run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true --set "
                                 "training.gradient_accumulation_steps=2 --set training.fsdp.no_sync=false "
                                 "--set training.fsdp.version=") +
                     version + " -q");
    EXPECT_TRUE(testing::refused_with(every, {"/training/fsdp/no_sync", "gradient_accumulation_steps 2",
                                              std::string(version) == "1" ? "incorrect" : "not modelled"}))
        << every.out;
  }
  auto ns =
      run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true --set "
          "training.fsdp.sharding_strategy=NO_SHARD -q");
  EXPECT_TRUE(testing::refused_with(ns, {"/training/fsdp/cpu_offload", "NO_SHARD"})) << ns.out;
  auto fused =
      run("run llama3-8b-fsdp-8x-h100 --set training.fsdp.cpu_offload=true --set "
          "training.optimizer_impl=fused -q");
  EXPECT_TRUE(testing::refused_with(fused, {"/training/optimizer_impl", "fused"})) << fused.out;
}

}  // namespace
}  // namespace ddpsim
