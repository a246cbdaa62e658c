//===- PlanManifestTest.cpp - the JSON reader and the compiled-plan manifest
//===//

#include "runtime/bundle/PlanManifest.h"
#include "runtime/run/BatchRows.h"
#include "support/JsonValue.h"
#include "test/unit/TempPath.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace whale {
namespace {

using rt::JsonValue;

TEST(JsonValue, ReadsEveryKindOfValue) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(rt::parseJson(
      R"( {"a": [1, -2.5e3, true, false, null], "b": {"c": "x\ty\u00e9\ud83d\ude00"}} )",
      v, error))
      << error;
  ASSERT_EQ(v.kind, JsonValue::Kind::Object);
  const JsonValue *a = v.find("a");
  ASSERT_TRUE(a && a->kind == JsonValue::Kind::Array && a->items.size() == 5);
  EXPECT_EQ(a->items[0].number, 1);
  EXPECT_EQ(a->items[1].number, -2500);
  EXPECT_TRUE(a->items[2].boolean);
  EXPECT_EQ(a->items[3].kind, JsonValue::Kind::Bool);
  EXPECT_FALSE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].kind, JsonValue::Kind::Null);
  // \u00e9 and a surrogate pair come out as UTF-8.
  EXPECT_EQ(v.find("b")->find("c")->string, "x\ty\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonValue, NamesTheLineAndColumnOfAnError) {
  JsonValue v;
  std::string error;
  struct Case {
    const char *text, *error;
  } cases[] = {
      {"", "line 1, column 1: expected a value"},
      {"{\"a\": 1,\n \"b\" 2}",
       "line 2, column 6: expected ':' after the member name"},
      {"[1, 2", "line 1, column 6: expected ',' or ']' in an array"},
      {"{\"a\": 01}", "line 1, column 8: expected ',' or '}' in an object"},
      {"\"tab\there\"", "line 1, column 5: expected no control character in a "
                        "string (escape it)"},
      {"\"\\x\"", "line 1, column 3: expected one of"},
      {"\"\\udc00\"", "expected a high surrogate before a low one"},
      {"1e999",
       "line 1, column 1: expected a number within the range of a double"},
      {"1 2",
       "line 1, column 3: expected the end of the input after the value"},
      {"tru", "expected a value"},
  };
  for (const Case &c : cases) {
    EXPECT_FALSE(rt::parseJson(c.text, v, error)) << c.text;
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.text << " gave: " << error;
  }
}

TEST(JsonValue, RefusesNestingDeeperThanItsBound) {
  JsonValue v;
  std::string error;
  std::string ok(JsonValue::kMaxDepth, '['), deep(100000, '[');
  ok += std::string(JsonValue::kMaxDepth, ']');
  EXPECT_TRUE(rt::parseJson(ok, v, error)) << error;
  EXPECT_FALSE(rt::parseJson(deep, v, error));
  EXPECT_NE(error.find("at most 64 levels of nesting"), std::string::npos);
}

/// A two-replica, two-stage plan with uneven replicas on two libraries.
PlanManifest sample() {
  PlanManifest m;
  m.model = "gpt \"small\"";
  m.settings.steps = 7;
  m.settings.seed = 42;
  m.settings.baseLr = 3e-4;
  m.settings.schedule = {"cosine", 2, 1e-5};
  m.settings.stateCount = 2;
  m.settings.saveEvery = 3;
  m.settings.logEvery = 2;
  m.ampBf16 = true;
  m.stages = 2;
  m.replicas = 2;
  m.globalBatch = 12;
  m.grid = {0, 2, 1, 3};
  m.localBatches = {8, 4};
  m.devices = {{"cpu:0", 2, 0},
               {"cpu:1", 0, 1 << 20},
               {"cuda:0", 0, 0},
               {"cuda:1", 0, 0}};
  m.data.kind = "tokens";
  m.data.path = "/data/corpus.bin";
  m.data.dtype = "uint32";
  m.data.seq = 16;
  m.data.batch = 12;
  m.data.seed = 9;
  m.data.inputs = {{WHALE_RT_I32, {12, 16}}, {WHALE_RT_I32, {12, 16}}};
  for (int64_t rows : {8, 4}) {
    ProgramLibrary lib;
    lib.file = "ranks-" + std::to_string(m.libraries.size()) + ".so";
    for (int s = 0; s < 2; ++s) {
      StageProgram st;
      st.entry = m.model + "_stage" + std::to_string(s);
      st.inputs = {{WHALE_RT_I32, {rows, 16}}, {WHALE_RT_I32, {rows, 16}}};
      st.params = {{"gpt/w" + std::to_string(s), {16, 32}, 1, 2, {2, 1}},
                   {"gpt/b", {32}, -1, 1, {}}};
      st.shards = 2;
      lib.stages.push_back(st);
    }
    m.files.push_back({lib.file, 4096 + static_cast<int64_t>(
                                             m.libraries.size()),
                       0xdeadbeefu});
    m.libraries.push_back(lib);
  }
  m.replicaLibrary = {0, 1};
  return m;
}

TEST(PlanManifest, ReadsBackWhatItWrites) {
  PlanManifest m = sample(), back;
  std::string path = whale::testing::tempPath("whale-manifest-test.json");
  ASSERT_EQ(writeManifest(m, path), "");
  std::string error;
  ASSERT_TRUE(readManifest(path, back, error)) << error;
  std::remove(path.c_str());
  EXPECT_EQ(back.model, m.model);
  EXPECT_EQ(back.settings.steps, 7);
  EXPECT_EQ(back.settings.seed, 42u);
  EXPECT_EQ(back.settings.baseLr, 3e-4);
  EXPECT_EQ(back.settings.schedule.kind, "cosine");
  EXPECT_EQ(back.settings.schedule.minLr, 1e-5);
  EXPECT_EQ(back.settings.lrFactor(5), m.settings.lrFactor(5));
  EXPECT_EQ(back.settings.saveEvery, 3);
  EXPECT_EQ(back.settings.logEvery, 2);
  EXPECT_TRUE(back.ampBf16);
  EXPECT_EQ(back.grid, m.grid);
  EXPECT_EQ(back.localBatches, m.localBatches);
  EXPECT_EQ(back.firstRow(1), 8);
  ASSERT_EQ(back.devices.size(), 4u);
  EXPECT_EQ(back.devices[0].threads, 2);
  EXPECT_EQ(back.devices[1].memory, 1 << 20);
  EXPECT_EQ(back.devices[2].name, "cuda:0");
  EXPECT_EQ(back.data.path, "/data/corpus.bin");
  EXPECT_EQ(back.data.dtype, "uint32");
  EXPECT_EQ(back.data.inputs, m.data.inputs);
  EXPECT_EQ(back.replicaLibrary, m.replicaLibrary);
  const StageProgram &p = back.program(1, 1);
  EXPECT_EQ(p.entry, m.model + "_stage1");
  EXPECT_EQ(p.inputs[0].shape, (std::vector<int64_t>{4, 16}));
  ASSERT_EQ(p.params.size(), 2u);
  EXPECT_EQ(p.params[0].weights, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p.params[0].axis, 1);
  EXPECT_EQ(p.params[1].axis, -1);
  ASSERT_EQ(back.files.size(), 2u);
  EXPECT_EQ(back.files[1].name, "ranks-1.so");
  EXPECT_EQ(back.files[1].bytes, 4097);
  EXPECT_EQ(back.files[1].crc32c, 0xdeadbeefu);
}

// What the compiler never writes is refused, with the field named: an
// entry point that is not the stage's, a library no file entry vouches for.
TEST(PlanManifest, RefusesWhatTheCompilerNeverWrites) {
  auto refused = [](PlanManifest m) {
    std::string path = whale::testing::tempPath("whale-manifest-refused.json");
    EXPECT_EQ(writeManifest(m, path), "");
    PlanManifest back;
    std::string error;
    EXPECT_FALSE(readManifest(path, back, error));
    std::remove(path.c_str());
    return error;
  };
  PlanManifest m = sample();
  m.libraries[0].stages[0].entry = "abort";
  EXPECT_NE(refused(m).find("libraries[0].stages[0].entry: expected \"" +
                            m.model + "_stage0\""),
            std::string::npos);
  m = sample();
  m.files.pop_back();
  EXPECT_NE(refused(m).find("libraries[1].file: expected a file the "
                            "manifest's \"files\" vouch for"),
            std::string::npos);
  for (const char *bad : {"tpu:0", "cuda:0@sms=0", "cuda:0@threads=2"}) {
    m = sample();
    m.devices[0].name = bad;
    EXPECT_NE(refused(m).find("devices[0].name: expected cpu:N, cuda:N or "
                              "cuda:N@sms=K, not"),
              std::string::npos)
        << bad;
  }
  // A share of a GPU's SMs is a device the compiler writes.
  m = sample();
  m.devices[0].name = "cuda:0@sms=40";
  std::string path = whale::testing::tempPath("whale-manifest-share.json");
  ASSERT_EQ(writeManifest(m, path), "");
  PlanManifest back;
  std::string error;
  EXPECT_TRUE(readManifest(path, back, error)) << error;
  EXPECT_EQ(back.devices[0].name, "cuda:0@sms=40");
  std::remove(path.c_str());
}

// Replicas sharing their rows (split_rows = "whole") read the same slice:
// the second group starts after the first group's rows, counted once.
TEST(PlanManifest, ReplicasOfARowGroupShareTheirRows) {
  PlanManifest m = sample(), back;
  m.replicas = 4;
  m.grid = {0, 1, 2, 3, 4, 5, 6, 7};
  m.localBatches = {8, 8, 4, 4};
  m.rowGroup = 2;
  m.replicaLibrary = {0, 0, 1, 1};
  m.devices.resize(8, {"cpu:0", 1, 0});
  std::string path = whale::testing::tempPath("whale-manifest-rows.json");
  ASSERT_EQ(writeManifest(m, path), "");
  std::string error;
  ASSERT_TRUE(readManifest(path, back, error)) << error;
  std::remove(path.c_str());
  EXPECT_EQ(back.rowGroup, 2);
  EXPECT_EQ(back.firstRow(0), 0);
  EXPECT_EQ(back.firstRow(1), 0);
  EXPECT_EQ(back.firstRow(2), 8);
  EXPECT_EQ(back.firstRow(3), 8);
  EXPECT_EQ(dataReplicaRows(back.localBatches, back.rowGroup),
            (std::vector<int64_t>{8, 4}));
}

/// The error of parsing `sample()` written out and edited by `edit`.
std::string errorAfter(void (*edit)(PlanManifest &)) {
  PlanManifest m = sample(), back;
  edit(m);
  std::string path = whale::testing::tempPath("whale-manifest-bad.json");
  if (std::string err = writeManifest(m, path); !err.empty())
    return err;
  std::string error;
  bool ok = readManifest(path, back, error);
  std::remove(path.c_str());
  return ok ? "accepted" : error;
}

TEST(PlanManifest, RefusesWhatWouldMisleadTheRunner) {
  auto has = [](const std::string &error, const char *what) {
    return error.find(what) != std::string::npos;
  };
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) { m.grid.pop_back(); }),
                  "grid: expected stages x replicas = 4 devices"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) { m.grid[3] = 9; }),
                  "grid[3]: expected a device index below 4"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) {
                    m.localBatches = {8, 5};
                  }),
                  "local_batches: they add up to 13, not the global batch 12"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) {
                    m.replicaLibrary = {0, 2};
                  }),
                  "replica_library[1]: expected a library index below 2"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) {
                    m.replicaLibrary = {1, 0};
                  }),
                  "replica_library[0]: its stage 0 program's input 0 is not "
                  "the model's input at the replica's 8 rows"));
  EXPECT_TRUE(
      has(errorAfter([](PlanManifest &m) { m.libraries[0].stages.pop_back(); }),
          "libraries[0].stages: expected one program per stage (2)"));
  EXPECT_TRUE(
      has(errorAfter(
              [](PlanManifest &m) { m.libraries[1].file = "../elsewhere.so"; }),
          "libraries[1].file: expected a file name beside the manifest"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) {
                    m.libraries[0].stages[0].params[0].weights = {1};
                  }),
                  "weights: expected one weight per shard"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) { m.data.batch = 6; }),
                  "data.batch: expected the global batch 12"));
  EXPECT_TRUE(has(errorAfter([](PlanManifest &m) {
                    m.data.inputs[0].shape = {1 << 30, 1 << 30};
                  }),
                  "more than 2^40 elements"));
}

TEST(PlanManifest, RefusesAnotherFormatOrVersion) {
  PlanManifest m;
  std::string error;
  EXPECT_FALSE(
      parseManifest(R"({"format": "whale-checkpoint-1"})", "p.json", m, error));
  EXPECT_NE(error.find("p.json: format: expected \"whale-plan\""),
            std::string::npos)
      << error;
  EXPECT_FALSE(parseManifest(R"({"format": "whale-plan", "version": 2})",
                             "p.json", m, error));
  EXPECT_NE(error.find("this runner reads version 1"), std::string::npos)
      << error;
  EXPECT_FALSE(parseManifest("[]", "p.json", m, error));
  EXPECT_NE(error.find("the top level: expected an object"), std::string::npos);
}

} // namespace
} // namespace whale
