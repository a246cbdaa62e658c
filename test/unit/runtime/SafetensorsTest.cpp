//===- SafetensorsTest.cpp - checkpoints: round trip and bad files --------===//

#include "runtime/store/Safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using namespace whale::rt;

namespace {

StoredTensor f32(std::string name, std::vector<int64_t> shape,
                 std::vector<float> values) {
  StoredTensor t{std::move(name), "F32", std::move(shape), {}};
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

TEST(Safetensors, RoundTrip) {
  Checkpoint c;
  c.tensors.push_back(
      f32("gpt/block_0/attention_0/linear_0/w", {2, 3}, {1, 2, 3, 4, 5, 6}));
  c.tensors.push_back(f32("gpt/block_0/attention_0/linear_0/w.adam_m", {2, 3},
                          {0, 0, 0, 0, 0, 0.5f}));
  StoredTensor step{"step", "I64", {}, std::vector<uint8_t>(8, 0)};
  step.data[0] = 42;
  c.tensors.push_back(step);
  c.metadata["format"] = "whale";
  c.metadata["quote\"d"] = "line\nbreak";
  std::string path = ::testing::TempDir() + "ckpt.safetensors";
  ASSERT_TRUE(writeSafetensors(path, c));
  Checkpoint back;
  Status st = readSafetensors(path, back);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.tensors[0].name, "gpt/block_0/attention_0/linear_0/w");
  EXPECT_EQ(back.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.tensors[0].data, c.tensors[0].data);
  EXPECT_EQ(back.find("step")->data[0], 42);
  EXPECT_TRUE(back.find("step")->shape.empty());
  EXPECT_EQ(back.metadata, c.metadata);
  // The data starts 8-byte aligned.
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char *>(&n), 8);
  EXPECT_EQ((n + 8) % 8, 0u);
}

TEST(Safetensors, RefusesInconsistentTensorsToWrite) {
  Checkpoint c;
  c.tensors.push_back(f32("w", {2, 2}, {1, 2, 3}));
  Status st = writeSafetensors(::testing::TempDir() + "bad.safetensors", c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "checkpoint tensor 'w' has 12 bytes, which do not "
                          "match dtype F32 and its shape");
}

std::vector<uint8_t> file(const std::string &header, size_t dataBytes) {
  std::vector<uint8_t> out(8 + header.size() + dataBytes, 0);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  Checkpoint c;
  Status st = parseSafetensors(bytes.data(), bytes.size(), "x", c);
  return st ? "ok" : st.message();
}

TEST(Safetensors, NamesWhatIsWrongWithABadFile) {
  EXPECT_EQ(parseError({1, 2, 3}),
            "checkpoint 'x' is 3 bytes, too short for a safetensors header");
  std::vector<uint8_t> huge = file("{}", 0);
  huge[5] = 1;
  EXPECT_EQ(parseError(huge).rfind("checkpoint 'x' declares a header of", 0),
            0u);
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                            "\"data_offsets\":[0,8]}}",
                            4)),
            "checkpoint 'x': tensor 'w' claims bytes [0, 8) of a 4-byte buffer "
            "but its dtype and shape need 8");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                            "\"data_offsets\":[0,4]}}",
                            8)),
            "checkpoint 'x': tensor 'w' claims bytes [0, 4) of a 8-byte buffer "
            "but its dtype and shape need 8");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"Q4\",\"shape\":[],"
                            "\"data_offsets\":[0,0]}}",
                            0))
                    .find("unknown dtype 'Q4'") != std::string::npos,
            true);
  EXPECT_NE(parseError(file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                            "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
                            "\"shape\":[1],\"data_offsets\":[4,8]}}",
                            8))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(parseError(file("{\"w\":{\"dtype\":\"F32\"}}", 0))
                .find("needs dtype, shape and two data_offsets"),
            std::string::npos);
  EXPECT_NE(parseError(file("[1,2]", 0))
                .find("expected the header to be a JSON object"),
            std::string::npos);
  EXPECT_NE(parseError(file("{\"w\":{\"dtype\":\"F\\uZZZZ\"", 0))
                .find("bad \\u escape"),
            std::string::npos);
  EXPECT_EQ(parseError(file("{\"__metadata__\":{\"k\":\"v\"}}", 0)), "ok");
}

} // namespace
