//===- SafetensorsTest.cpp - checkpoints: round trip and bad files --------===//

#include "runtime/store/Safetensors.h"
#include "test/unit/TempPath.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

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
  std::string path = whale::testing::tempPath("ckpt.safetensors");
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
  // The metadata as written, and a checksum of each tensor and of them.
  for (const auto &[k, v] : c.metadata)
    EXPECT_EQ(back.metadata[k], v);
  EXPECT_EQ(back.metadata.size(), c.metadata.size() + 4);
  EXPECT_TRUE(back.metadata.count(kMetadataCrc));
  EXPECT_TRUE(back.metadata.count(std::string(kCrcPrefix) + "step"));
  // The data starts 8-byte aligned.
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char *>(&n), 8);
  EXPECT_EQ((n + 8) % 8, 0u);
}

TEST(Safetensors, RefusesInconsistentTensorsToWrite) {
  Checkpoint c;
  c.tensors.push_back(f32("w", {2, 2}, {1, 2, 3}));
  Status st = writeSafetensors(whale::testing::tempPath("bad.safetensors"), c);
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
  // 2^62 f32 elements need 2^64 bytes, which wrapped to 0: refused by
  // their count, as is a count past uint64.
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":"
                            "[281474976710656,16384],\"data_offsets\":[0,0]}}",
                            0)),
            "checkpoint 'x': tensor 'w' has more than 2^40 elements");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":"
                            "[4294967296,4294967296,16],"
                            "\"data_offsets\":[0,0]}}",
                            0)),
            "checkpoint 'x': tensor 'w' has more than 2^40 elements");
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
                .find("expected four hexadecimal digits after \\u"),
            std::string::npos);
  EXPECT_EQ(parseError(file("{\"__metadata__\":{\"k\":\"v\"}}", 0)), "ok");
  // A file of another writer, without checksums, loads on its layout.
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                            "\"data_offsets\":[0,4]}}",
                            4)),
            "ok");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                            "\"data_offsets\":[4,8]}}",
                            8)),
            "checkpoint 'x': 4 bytes of the data buffer before tensor 'w' "
            "belong to no tensor");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                            "\"data_offsets\":[0,4]}}",
                            12)),
            "checkpoint 'x': 8 bytes after the last tensor belong to none");
  EXPECT_EQ(parseError(file("{} x", 0)),
            "checkpoint 'x': its header is not JSON: line 1, column 4: "
            "expected the end of the input after the value");
  // Writers pad the header with spaces.
  EXPECT_EQ(parseError(file("{}    ", 0)), "ok");
}

TEST(Safetensors, HeaderValuesOfTheWrongKindAreRefused) {
  const std::string w = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],";
  EXPECT_EQ(parseError(file(w + "\"data_offsets\":[0,4]},\"w\":{}}", 4)),
            "checkpoint 'x': tensor 'w' appears twice");
  for (const char *offsets : {"[0,4.5]", "[-1,3]", "[0,1e300]", "[\"0\",4]"})
    EXPECT_EQ(parseError(file(w + "\"data_offsets\":" + offsets + "}}", 4)),
              "checkpoint 'x': the data_offsets of tensor 'w' holds something "
              "other than a non-negative integer below 2^53")
        << offsets;
  EXPECT_EQ(parseError(file(w + "\"data_offsets\":[0,4,8]}}", 4)),
            "checkpoint 'x': the data_offsets of tensor 'w' has more than 2 "
            "entries");
  EXPECT_EQ(parseError(file("{\"w\":{\"dtype\":7,\"shape\":[1],"
                            "\"data_offsets\":[0,4]}}",
                            4)),
            "checkpoint 'x': tensor 'w' has a dtype that is not a string");
  EXPECT_EQ(parseError(file("{\"__metadata__\":{\"step\":12}}", 0)),
            "checkpoint 'x': metadata 'step' is not a string");
  EXPECT_EQ(parseError(file("{\"w\":[1]}", 0)),
            "checkpoint 'x': expected an object for tensor 'w'");
}

/// A checkpoint as Whale writes it, in memory.
std::vector<uint8_t> written(const Checkpoint &c) {
  std::string path = whale::testing::tempPath("written.safetensors");
  EXPECT_TRUE(writeSafetensors(path, c));
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

Checkpoint twoTensors() {
  Checkpoint c;
  c.tensors.push_back(f32("a", {4}, {1, 2, 3, 4}));
  c.tensors.push_back(f32("b", {4}, {5, 6, 7, 8}));
  c.metadata["step"] = "12";
  return c;
}

uint64_t headerLength(const std::vector<uint8_t> &bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(bytes[i]) << (8 * i);
  return n;
}

TEST(Safetensors, EverySingleByteFlipOfTheDataIsFound) {
  std::vector<uint8_t> good = written(twoTensors());
  ASSERT_EQ(parseError(good), "ok");
  size_t data = 8 + headerLength(good);
  ASSERT_EQ(good.size() - data, 32u);
  for (size_t at = data; at < good.size(); ++at)
    for (uint8_t bit : {0x01, 0x80}) {
      std::vector<uint8_t> bad = good;
      bad[at] ^= bit;
      EXPECT_NE(parseError(bad).find("does not match its checksum"),
                std::string::npos)
          << "byte " << at;
    }
}

TEST(Safetensors, DamagedHeadersAndLayoutsAreFound) {
  std::vector<uint8_t> good = written(twoTensors());
  uint64_t n = headerLength(good);
  // The length field one off either way.
  for (int delta : {-1, 1}) {
    std::vector<uint8_t> bad = good;
    uint64_t m = n + delta;
    for (int i = 0; i < 8; ++i)
      bad[i] = static_cast<uint8_t>(m >> (8 * i));
    EXPECT_NE(parseError(bad), "ok") << delta;
  }
  // Trailing bytes after the data.
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_EQ(parseError(longer),
            "checkpoint 'x': 1 bytes after the last tensor belong to none");
  // The two tensors' offsets swapped: the layout holds, the checksums not.
  std::string header(good.begin() + 8, good.begin() + 8 + n);
  size_t a = header.find("[0,16]"), b = header.find("[16,32]");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  std::string swapped = header.substr(0, a) + "[16,32" +
                        header.substr(a + 5, b - a - 5) + "[0,16]" +
                        header.substr(b + 7);
  // Same length: "[0,16]"+"[16,32]" vs "[16,32"+"[0,16]" plus the one
  // space of padding moved.
  swapped.resize(n, ' ');
  std::vector<uint8_t> bad = good;
  std::memcpy(bad.data() + 8, swapped.data(), n);
  EXPECT_NE(parseError(bad).find("does not match its checksum"),
            std::string::npos)
      << parseError(bad);
  // A changed metadata value: its checksum is kept apart from the tensors'.
  size_t step = header.find("\"12\"");
  ASSERT_NE(step, std::string::npos);
  bad = good;
  bad[8 + step + 1] = '9';
  EXPECT_EQ(parseError(bad), "checkpoint 'x': its metadata do not match their "
                             "checksum: the file is damaged");
}

TEST(Safetensors, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  std::string dir = whale::testing::tempPath("full/");
  std::string path = dir + "c.safetensors";
  ::mkdir(dir.c_str(), 0755);
  ASSERT_TRUE(writeSafetensors(path, twoTensors()));
  // A temporary that cannot be written: its name is taken by a folder.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  ::mkdir(tmp.c_str(), 0755);
  Checkpoint other = twoTensors();
  other.metadata["step"] = "13";
  EXPECT_FALSE(writeSafetensors(path, other));
  ::rmdir(tmp.c_str());
  Checkpoint back;
  ASSERT_TRUE(readSafetensors(path, back));
  EXPECT_EQ(back.metadata["step"], "12");
}

TEST(Safetensors, ReadsOnlyRegularFiles) {
  Checkpoint c;
  for (const char *path : {"/dev/zero", "/tmp", "/proc/self/mem"}) {
    Status st = readSafetensors(path, c);
    EXPECT_FALSE(st) << path;
  }
}

} // namespace
