//===- DataTest.cpp - data order and the text dataset ---------------------===//

#include "runtime/data/DataOrder.h"
#include "runtime/data/TextDataset.h"
#include "test/unit/TempPath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

using namespace whale::rt;

namespace {

TEST(DataOrder, EachEpochIsAPermutationDependingOnSeedAndEpochOnly) {
  DataOrder a(7, 100), b(7, 100), c(8, 100);
  std::vector<int64_t> e0, e1;
  for (int64_t p = 0; p < 100; ++p)
    e0.push_back(a.sampleAt(p));
  for (int64_t p = 100; p < 200; ++p)
    e1.push_back(a.sampleAt(p));
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i)
    ASSERT_EQ(sorted[i], i);
  EXPECT_NE(e0, e1); // a new order each epoch
  // Reading positions in another order (a resumed run) gives the same.
  for (int64_t p = 199; p >= 0; --p)
    ASSERT_EQ(b.sampleAt(p), p < 100 ? e0[p] : e1[p - 100]);
  int same = 0;
  for (int64_t p = 0; p < 100; ++p)
    same += c.sampleAt(p) == e0[p];
  EXPECT_LT(same, 10); // another seed, another order
}

TEST(DataOrder, RankSlicesTileTheGlobalBatch) {
  // Uneven slices (as the balancer makes them) still cover the global
  // batch exactly once, in order.
  DataOrder order(3, 37);
  for (int64_t step = 0; step < 5; ++step) {
    std::vector<int64_t> global = order.slice(step, 12, 0, 12);
    std::vector<int64_t> joined;
    int64_t offset = 0;
    for (int64_t count : {5, 4, 3}) {
      std::vector<int64_t> part = order.slice(step, 12, offset, count);
      joined.insert(joined.end(), part.begin(), part.end());
      offset += count;
    }
    EXPECT_EQ(joined, global);
  }
}

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = whale::testing::tempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(TextDataset, WindowsOfBytesShiftedByOne) {
  std::string path = writeTemp("text-a.txt", "abcdefghij"); // 10 bytes
  TextDataset ds;
  ASSERT_TRUE(TextDataset::open(path, 3, ds));
  EXPECT_EQ(ds.numSamples(), 3); // (10 - 1) / 3
  int32_t in[3], tgt[3];
  ds.sample(1, in, tgt);
  EXPECT_EQ(in[0], 'd');
  EXPECT_EQ(in[2], 'f');
  EXPECT_EQ(tgt[0], 'e');
  EXPECT_EQ(tgt[2], 'g');
  ds.sample(2, in, tgt);
  EXPECT_EQ(tgt[2], 'j');
}

TEST(TextDataset, AFolderIsItsFilesInSortedOrder) {
  std::string dir = whale::testing::tempPath("textdir");
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir + "/sub").c_str()),
            0);
  std::ofstream(dir + "/b.txt") << "BB";
  std::ofstream(dir + "/a.txt") << "AA";
  std::ofstream(dir + "/sub/c.txt") << "CC";
  TextDataset ds;
  ASSERT_TRUE(TextDataset::open(dir, 5, ds));
  ASSERT_EQ(ds.files().size(), 3u);
  EXPECT_EQ(ds.files()[0], dir + "/a.txt");
  EXPECT_EQ(ds.files()[2], dir + "/sub/c.txt");
  int64_t in[5], tgt[5];
  ds.sample(0, in, tgt);
  std::string got;
  for (int64_t v : in)
    got += static_cast<char>(v);
  EXPECT_EQ(got, "AABBC");
}

TEST(TextDataset, ClearErrors) {
  TextDataset ds;
  Status missing = TextDataset::open("/no/such/corpus", 8, ds);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.message(),
            "cannot read text data '/no/such/corpus': No such file or "
            "directory");
  // Not regular files: never read (a device never ends, a FIFO blocks).
  for (const char *special : {"/dev/zero", "/dev/urandom"}) {
    Status st = TextDataset::open(special, 8, ds);
    EXPECT_EQ(st.message(), "cannot read text data '" + std::string(special) +
                                "': it is a device");
  }
  std::string shortFile = writeTemp("text-short.txt", "abc");
  Status tooShort = TextDataset::open(shortFile, 8, ds);
  ASSERT_FALSE(tooShort);
  EXPECT_EQ(tooShort.message(),
            "text data '" + shortFile +
                "' has 3 bytes; one sample of seq = 8 needs 9");
}

TEST(TextDataset, UnigramEntropy) {
  TextDataset ds;
  ASSERT_TRUE(TextDataset::open(writeTemp("text-h.txt", "aabb"), 1, ds));
  EXPECT_DOUBLE_EQ(ds.unigramEntropyBits(), 1.0);
}

} // namespace
