//===- ElasticTest.cpp - a running job resharded to other devices ---------===//
//
// A run whose devices change twice while it trains (whale run --elastic)
// must train like one that never changed: the same global batch and
// sample order go on, and the state moves rank to rank by the reshard
// plan, moving exactly the plan's lower bound. For data, pipeline, tensor
// and hybrid parallelism.
//
//===----------------------------------------------------------------------===//

#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/elastic/StateCollection.h"
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/run/ElasticSchedule.h"
#include "test/unit/EquivalenceSupport.h"
#include "test/unit/TempPath.h"
#include "test/unit/Worst.h"

#include <filesystem>

namespace {

using namespace whale::testing;

/// Trains `text` for 6 steps on `start`, going on on each `changes`
/// cluster after steps 2 and 4, and compares with an uninterrupted run on
/// `start`.
void expectElasticLikeUninterrupted(const std::string &text,
                                    const std::string &name,
                                    const std::string &start,
                                    const std::vector<std::string> &changes) {
  auto run = [&](bool elastic) {
    return trainText(text, name, start, [&](whale::TrainOptions &opts) {
      opts.steps = 6;
      if (elastic)
        for (size_t i = 0; i < changes.size(); ++i)
          opts.elastic.push_back({int64_t(2 * (i + 1)), changes[i]});
    });
  };
  whale::TrainResult plain = run(false), elastic = run(true);
  ASSERT_TRUE(plain.ok) << plain.error;
  ASSERT_TRUE(elastic.ok) << elastic.error;
  ASSERT_EQ(elastic.losses.size(), plain.losses.size());
  for (size_t i = 0; i < plain.losses.size(); ++i)
    EXPECT_LT(relative(elastic.losses[i], plain.losses[i]), 1e-4)
        << "step " << i + 1;
  for (const auto &[param, want] : plain.parameters) {
    const std::vector<float> &got = elastic.parameters[param];
    ASSERT_EQ(got.size(), want.size()) << param;
    double scale = 0, diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = worseOf(scale, std::fabs(double(want[i])));
      diff = worseOf(diff, std::fabs(double(got[i]) - double(want[i])));
    }
    if (scale >= 1e-6) { // noise-only tensors: see EquivalenceSupport.h
      EXPECT_LT(diff / std::max(scale, 1e-3), 1e-4) << param;
    }
  }
  ASSERT_EQ(elastic.reshards.size(), changes.size());
  for (const whale::ReshardReport &r : elastic.reshards)
    EXPECT_EQ(r.movedBytes, r.lowerBoundBytes) << "after step " << r.afterStep;
  // The last device set computed on the whole global batch.
  int64_t rows = 0;
  for (int64_t b : elastic.localBatches)
    rows += b;
  EXPECT_GT(rows, 0);
}

TEST(Elastic, DataParallelFourTwoEight) {
  expectElasticLikeUninterrupted(source(kMlp), kMlp, "cpu:4",
                                 {"cpu:2", "cpu:8"});
}

TEST(Elastic, PipelineShrinksAndGrows) {
  // 2 stages x 2 replicas, then x 1, then x 4.
  expectElasticLikeUninterrupted(source(kGpt), kGpt, "cpu:4",
                                 {"cpu:2", "cpu:8"});
}

TEST(Elastic, TensorParallelFourTwoFour) {
  expectElasticLikeUninterrupted(source(kMlpSplit), kMlpSplit, "cpu:4",
                                 {"cpu:2", "cpu:4"});
}

TEST(Elastic, HybridAndUnequalDevices) {
  expectElasticLikeUninterrupted(
      source(kHybrid), kHybrid, "cpu:4",
      {"cpu:1@threads=3,cpu:1@threads=1", "cpu:4"});
}

// Parameters sharded over the replicas (ZeRO stage 3): each lives on its
// owner alone, and a change of devices moves it from there to its new
// owner (or to every rank of a plan down to one replica), still the lower
// bound; an MLP over 4, 2, 8, and the pipelined GPT over 4, 2 (one replica
// a stage: nothing sharded), 8.
TEST(Elastic, ShardedParametersMoveFromTheirOwners) {
  expectElasticLikeUninterrupted(
      edit(source(kMlp), "model mlp",
           "config {\n  shard_parameters = true\n}\n\nmodel mlp"),
      kMlp, "cpu:4", {"cpu:2", "cpu:8"});
  expectElasticLikeUninterrupted(
      edit(source(kGpt), "num_micro_batch = 4",
           "num_micro_batch = 4\n  shard_parameters = true"),
      kGpt, "cpu:4", {"cpu:2", "cpu:8"});
}

// Hybrid sharding (shard_group = 2): each sharding group holds a copy of
// the parameters, so a change of devices may take a parameter from any
// copy; still the lower bound. An MLP over 4 (two groups), 8 (four), 2
// (one), and the pipelined GPT over 4, 2 (one replica a stage: nothing
// sharded), 8.
TEST(Elastic, HybridShardedParametersMoveFromACopy) {
  expectElasticLikeUninterrupted(
      edit(source(kMlp), "model mlp",
           "config {\n  shard_parameters = true\n  shard_group = 2\n}\n\n"
           "model mlp"),
      kMlp, "cpu:4", {"cpu:8", "cpu:2"});
  expectElasticLikeUninterrupted(
      edit(source(kGpt), "num_micro_batch = 4",
           "num_micro_batch = 4\n  shard_parameters = true\n  shard_group = "
           "2"),
      kGpt, "cpu:4", {"cpu:2", "cpu:8"});
}

/// Trains `text` on `cluster` for steps (from a checkpoint when `load`),
/// saving the ranks' own boxes when `save`.
whale::TrainResult trainSteps(const std::string &text, const std::string &name,
                              const std::string &cluster, int64_t steps,
                              const std::string &load,
                              const std::string &save) {
  return trainText(text, name, cluster, [&](whale::TrainOptions &opts) {
    opts.steps = steps;
    opts.loadPath = load;
    opts.savePath = save;
    opts.saveRanks = !save.empty();
    opts.keepParameters = false;
  });
}

TEST(Elastic, RankFilesLoadUnderAnotherPlanAndReshardOffline) {
  const std::string dir = whale::testing::tempPath("elastic_ranks");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(std::filesystem::create_directories(dir)) << dir;
  std::string text = source(kGpt);
  whale::TrainResult plain = trainSteps(text, kGpt, "cpu:4", 6, "", "");
  ASSERT_TRUE(plain.ok) << plain.error;
  // Steps 1-2 on 4 devices, one file per rank; steps 3-4 on 2 devices
  // loading them (resharded as they load).
  whale::TrainResult a =
      trainSteps(text, kGpt, "cpu:4", 2, "", dir + "/four");
  ASSERT_TRUE(a.ok) << a.error;
  whale::TrainResult b =
      trainSteps(text, kGpt, "cpu:2", 4, dir + "/four", dir + "/two");
  ASSERT_TRUE(b.ok) << b.error;
  ASSERT_EQ(b.firstStep, 3);
  // Offline: the two-device files rewritten for eight devices, then steps
  // 5-6 there.
  whale::StateCheckpoint two, eight;
  ASSERT_EQ(whale::loadStateCheckpoint(dir + "/two", two), "");
  EXPECT_EQ(two.layout.ranks.size(), 2u);
  EXPECT_EQ(two.nextStep, 4);
  // A process reads the data of the ranks it needs alone: the layout is
  // every file's, the tensors rank 1's (the step and the seed are every
  // rank's, from the headers).
  {
    whale::StateCheckpoint part;
    const std::set<int64_t> one = {1};
    ASSERT_EQ(whale::loadStateCheckpoint(dir + "/two", part, &one), "");
    EXPECT_TRUE(part.layout.tensors.size() == two.layout.tensors.size());
    EXPECT_EQ(part.layout.ranks.size(), 2u);
    size_t tensors = 0;
    for (const auto &[key, boxes] : part.held) {
      const bool scalar = key.second == "step" || key.second == "seed";
      if (!scalar) {
        EXPECT_EQ(key.first, 1) << key.second;
        EXPECT_TRUE(boxes == two.held.at(key)) << key.second;
        ++tensors;
      }
    }
    EXPECT_GT(tensors, 0u);
  }
  whale::Cluster cluster;
  std::string error;
  ASSERT_TRUE(whale::parseCluster("cpu:8", cluster, error));
  whale::Interpreter interp;
  ASSERT_TRUE(
      interp.loadString(text, std::string(WHALE_SOURCE_DIR) + "/" + kGpt));
  whale::PlannedModel plan;
  ASSERT_TRUE(whale::planModel(interp, "", cluster, {}, plan, error)) << error;
  eight.model = two.model;
  eight.nextStep = two.nextStep;
  eight.seed = two.seed;
  whale::ReshardPlan reshard;
  ASSERT_TRUE(whale::stateOf(plan, cluster, eight.layout, error)) << error;
  ASSERT_TRUE(whale::planReshard(two.layout, eight.layout, reshard, error));
  ASSERT_TRUE(
      whale::applyReshard(eight.layout, reshard, two.held, eight.held, error));
  ASSERT_EQ(whale::saveRankCheckpoint(dir + "/eight", eight), "");
  whale::TrainResult c =
      trainSteps(text, kGpt, "cpu:8", 6, dir + "/eight", "");
  ASSERT_TRUE(c.ok) << c.error;
  std::vector<double> resumed = a.losses;
  resumed.insert(resumed.end(), b.losses.begin(), b.losses.end());
  resumed.insert(resumed.end(), c.losses.begin(), c.losses.end());
  ASSERT_EQ(resumed.size(), plain.losses.size());
  for (size_t i = 0; i < resumed.size(); ++i)
    EXPECT_LT(relative(resumed[i], plain.losses[i]), 1e-4) << "step " << i + 1;
  // A damaged rank file is found, not used: one byte flipped inside the
  // data by its checksum, a truncated file by its header.
  const std::string damaged = dir + "/two/rank-00001.safetensors";
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    std::streamoff last = f.tellg() - std::streamoff(1);
    f.seekg(last);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(last);
    f.write(&c, 1);
  }
  whale::TrainResult d =
      trainSteps(text, kGpt, "cpu:2", 6, dir + "/two", "");
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("does not match its checksum"), std::string::npos)
      << d.error;
  { std::ofstream(damaged) << "garbage\n"; }
  d = trainSteps(text, kGpt, "cpu:2", 6, dir + "/two", "");
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.error.find("declares a header"), std::string::npos) << d.error;
}

/// Trains `text` for 8 steps on `cluster`, the rank on `device` failing in
/// step 6, with the state kept in memory every `every` steps.
whale::TrainResult trainFailing(const std::string &text,
                                const std::string &name,
                                const std::string &cluster, int64_t device,
                                int64_t every) {
  return trainText(text, name, cluster, [&](whale::TrainOptions &opts) {
    opts.steps = 8;
    opts.replicateEvery = every;
    opts.failDevice = device;
    opts.failStep = 6;
  });
}

TEST(Elastic, AFailedRankIsRecoveredFromTheStore) {
  for (auto [script, device] :
       {std::pair<const char *, int64_t>{kGpt, 1}, {kMlpSplit, 2},
        {kMlp, 3}}) {
    SCOPED_TRACE(script);
    std::string text = source(script);
    whale::TrainResult plain = trainSteps(text, script, "cpu:4", 8, "", "");
    whale::TrainResult failing = trainFailing(text, script, "cpu:4", device, 2);
    ASSERT_TRUE(plain.ok) << plain.error;
    ASSERT_TRUE(failing.ok) << failing.error;
    ASSERT_EQ(failing.recoveries.size(), 1u);
    const whale::RecoveryReport &r = failing.recoveries[0];
    EXPECT_EQ(r.failedStep, 6);
    EXPECT_EQ(r.resumedAfter, 4); // the store's last copy
    EXPECT_EQ(r.devicesBefore, 4);
    EXPECT_LT(r.devicesAfter, 4);
    EXPECT_NE(r.failure.find("injected"), std::string::npos);
    EXPECT_EQ(failing.storeUpdates, 3); // after steps 2, 4 and 6
    ASSERT_EQ(failing.losses.size(), plain.losses.size());
    for (size_t i = 0; i < plain.losses.size(); ++i)
      EXPECT_LT(relative(failing.losses[i], plain.losses[i]), 1e-4)
          << "step " << i + 1;
  }
}

TEST(Elastic, WithNoCopyInMemoryAFailedRankResumesFromTheLastCheckpoint) {
  // No store, but save_every = 2 with a save path: the rank failing in
  // step 6 sends the survivors back to the checkpoint of step 4, written
  // whole or as one file per rank, and the run ends as one that never
  // failed.
  for (const char *script : {kGpt, kMlpSplit}) {
    for (bool ranks : {false, true}) {
      SCOPED_TRACE(std::string(script) + (ranks ? " rank files" : " one file"));
      std::string text =
          edit(source(script), "steps = ", "save_every = 2\n  steps = ");
      std::string path = whale::testing::tempPath(
          "fallback-" + std::to_string(ranks) + "-" +
          std::to_string(std::hash<std::string>()(script)));
      whale::TrainResult plain = trainSteps(text, script, "cpu:4", 8, "", "");
      whale::TrainResult failing =
          trainText(text, script, "cpu:4", [&](whale::TrainOptions &opts) {
            opts.steps = 8;
            opts.failDevice = 1;
            opts.failStep = 6;
            opts.savePath = path;
            opts.saveRanks = ranks;
          });
      ASSERT_TRUE(plain.ok) << plain.error;
      ASSERT_TRUE(failing.ok) << failing.error;
      ASSERT_EQ(failing.recoveries.size(), 1u);
      const whale::RecoveryReport &r = failing.recoveries[0];
      EXPECT_EQ(r.resumedAfter, 4);
      EXPECT_EQ(r.source, "checkpoint " + path);
      EXPECT_EQ(failing.storeUpdates, 0);
      ASSERT_EQ(failing.losses.size(), plain.losses.size());
      for (size_t i = 0; i < plain.losses.size(); ++i)
        EXPECT_LT(relative(failing.losses[i], plain.losses[i]), 1e-4)
            << "step " << i + 1;
    }
  }
}

TEST(Elastic, AFailedRankWithoutAStoreStopsTheRun) {
  std::string text = source(kMlp);
  whale::TrainResult r = trainFailing(text, kMlp, "cpu:4", 2, 0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("step 6: rank 2: failed (injected for a test)"),
            std::string::npos)
      << r.error;
}

TEST(Elastic, AChangeOutsideTheRunIsAnError) {
  auto changing = [&](whale::ElasticChange change) {
    return trainText(source(kMlp), kMlp, "cpu:2",
                     [&](whale::TrainOptions &opts) {
                       opts.steps = 4;
                       opts.elastic = {change};
                     });
  };
  whale::TrainResult r = changing({4, "cpu:1"});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("between step 1 and step 3"), std::string::npos)
      << r.error;
  // Devices the model does not fit: refused before the first step, not
  // when the change is due.
  r = changing({2, "cpu:1@mem=1KiB"});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("the elastic change after step 2 to cpu:1@mem=1KiB "
                         "cannot be made"),
            std::string::npos)
      << r.error;
  EXPECT_TRUE(r.losses.empty());
}

TEST(Elastic, ScheduleFilesAreCheckedWithTheirPlace) {
  std::vector<whale::ScheduledChange> out;
  std::string error;
  const auto kDevices = whale::ChangeTarget::Devices;
  EXPECT_TRUE(whale::parseElasticSchedule(
      "# comment\n\n3 cpu:2  # shrink\n6 cpu:1@threads=2\n", "s.txt", kDevices,
      out, error))
      << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].afterStep, 3);
  EXPECT_EQ(out[0].target, "cpu:2");
  EXPECT_EQ(out[1].target, "cpu:1@threads=2");
  EXPECT_FALSE(whale::parseElasticSchedule("3 cpu:2\nx cpu:4\n", "s.txt",
                                           kDevices, out, error));
  EXPECT_EQ(error, "s.txt:2:1: error: expected the step after which the "
                   "devices change (a positive integer), got 'x'");
  EXPECT_FALSE(whale::parseElasticSchedule("3 cpu:2\n2 cpu:4\n", "s.txt",
                                           kDevices, out, error));
  EXPECT_EQ(error, "s.txt:2:1: error: step 2 does not come after step 3 of "
                   "the line before");
  EXPECT_FALSE(
      whale::parseElasticSchedule("  5\n", "s.txt", kDevices, out, error));
  EXPECT_EQ(error, "s.txt:1:4: error: expected the devices after step 5 (a "
                   "cluster spec such as cpu:2)");
  EXPECT_FALSE(whale::parseElasticSchedule("5 cpu:2 cpu:4\n", "s.txt", kDevices,
                                           out, error));
  EXPECT_EQ(error, "s.txt:1:3: error: expected one cluster spec, got 'cpu:2 "
                   "cpu:4'");
  // whale-exec's: a compiled plan's folder, the rest of the line.
  EXPECT_TRUE(whale::parseElasticSchedule("4 plans/two devices\n", "s.txt",
                                          whale::ChangeTarget::CompiledPlan,
                                          out, error));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].target, "plans/two devices");
  EXPECT_FALSE(whale::parseElasticSchedule(
      "4\n", "s.txt", whale::ChangeTarget::CompiledPlan, out, error));
  EXPECT_EQ(error, "s.txt:1:2: error: expected the compiled plan after step 4 "
                   "(a folder whale compile --emit=bundle wrote)");
  EXPECT_FALSE(whale::parseElasticSchedule("99999999999999999999 cpu:2\n",
                                           "s.txt", kDevices, out, error));
}

} // namespace
