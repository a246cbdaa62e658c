//===- FusedProgramTest.cpp - element programs read and run on the CPU ----===//
//
// The words of an element program (runtime/ops/ElementProgram.h) as the GPU
// reads them: a program the lowering would write runs to the values it names,
// operands of other sizes are refused before any thread runs, and words
// that are no program give a reason, never a read past them.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/Bf16.h"
#include "runtime/ops/ElementProgram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

namespace fused = whale::rt::fused;

/// relu(x + b) over [4, 3] with b a row, and its sum over the rows.
std::vector<int64_t> reluSum() {
  return {fused::kMagic, 2, 4, 3, // rank, extents
          2, 2, 6, 4,             // inputs, outputs, registers, instructions
          1, 1, 0, 0, 1, 0,       // x reads both; b the columns (f32)
          1, 1, 0, 5, 0,          // y keeps both: register 5, f32
          0, 1, 0, 5, 0,          // s sums the rows of register 5, f32
          fused::NoRowOp,
          fused::Add, 2, 0, 1, -1,      fused::Positive, 3, 2, -1, -1,
          fused::Const, 4, 0, -1, -1,   fused::Select, 5, 3, 2, 4};
}

TEST(FusedProgram, RunsToTheValuesItNames) {
  std::vector<int64_t> words = reluSum();
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why)) << why;
  EXPECT_EQ(l.threads, 3); // a thread per column, each adding 4 rows
  EXPECT_EQ(l.terms, 4);
  std::vector<float> x(12), b = {-1, 0, 1}, y(12, -7), s(3, -7);
  for (int i = 0; i < 12; ++i)
    x[i] = float(i % 5) - 2;
  const int64_t sizes[] = {12, 3, 12, 3};
  ASSERT_TRUE(fused::fitsOperands(l, sizes, 4, why)) << why;
  const void *data[] = {x.data(), b.data(), y.data(), s.data()};
  for (int64_t t = 0; t < l.threads; ++t)
    fused::runThread(l, code.data(), int(code.size()), data, t);
  for (int c = 0; c < 3; ++c) {
    float sum = 0;
    for (int r = 0; r < 4; ++r) {
      float v = std::max(x[r * 3 + c] + b[c], 0.0f);
      EXPECT_EQ(y[r * 3 + c], v) << r << "," << c;
      sum += v;
    }
    EXPECT_EQ(s[c], sum) << c;
  }
}

/// Without sums, an operand that reads every dimension is dense (point t
/// is its element t, no index arithmetic); a broadcast one is not, and
/// every element still lands where the general index puts it.
TEST(FusedProgram, DenseOperandsSkipTheIndexArithmetic) {
  std::vector<int64_t> words = {
      fused::kMagic, 2, 4, 3, 2, 1, 6, 4, // relu(x + b), no sum
      1, 1, 0, 0, 1, 0,                   // x reads both; b the columns
      1, 1, 0, 5, 0,                      // y keeps both: register 5
      fused::NoRowOp,
      fused::Add, 2, 0, 1, -1,      fused::Positive, 3, 2, -1, -1,
      fused::Const, 4, 0, -1, -1,   fused::Select, 5, 3, 2, 4};
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why)) << why;
  EXPECT_TRUE(l.dense[0]);
  EXPECT_FALSE(l.dense[1]);
  EXPECT_TRUE(l.dense[2]);
  EXPECT_TRUE(l.narrow);
  std::vector<float> x(12), b = {-1, 0, 1}, y(12, -7);
  for (int i = 0; i < 12; ++i)
    x[i] = float(i % 5) - 2;
  const void *data[] = {x.data(), b.data(), y.data()};
  for (int64_t t = 0; t < l.threads; ++t)
    fused::runThread(l, code.data(), int(code.size()), data, t);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(y[i], std::max(x[i] + b[i % 3], 0.0f)) << i;
  // With a sum, nothing is dense: a thread's points are not its index.
  std::vector<int64_t> summed = reluSum();
  ASSERT_TRUE(fused::parse(summed.data(), summed.size(), l, code, why));
  for (int s = 0; s < 4; ++s)
    EXPECT_FALSE(l.dense[s]) << s;
}

/// A GPU splits the terms of few, long sums into parts (a bias gradient:
/// 768 sums of 8,192 rows) and leaves short or many sums whole.
TEST(FusedProgram, FewLongSumsAreSplitIntoParts) {
  fused::Layout l;
  l.outputs = 1;
  l.sum[0] = true;
  l.threads = 768;
  l.terms = 8192;
  EXPECT_EQ(fused::termParts(l, 1 << 18), 8192 / fused::kMinTermsAPart);
  l.terms = 40 * fused::kMinTermsAPart;
  EXPECT_EQ(fused::termParts(l, 1 << 18), 40);
  EXPECT_EQ(fused::termParts(l, 768 * 4), 4);
  EXPECT_EQ(fused::termParts(l, 768), 1);
  l.terms = fused::kMinTermsAPart - 1;
  EXPECT_EQ(fused::termParts(l, 1 << 18), 1);
  l.sum[0] = false; // no sum: a thread per point already
  l.terms = 8192;
  EXPECT_EQ(fused::termParts(l, 1 << 18), 1);
}

/// The parts' runs of terms, partial sums added in order, give every result
/// runThread gives, whether the parts divide the terms or not.
TEST(FusedProgram, SumsInPartsEqualSumsWhole) {
  std::vector<int64_t> words = reluSum();
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why)) << why;
  std::vector<float> x(12), b = {-1, 0, 1}, y(12), s(3);
  for (int i = 0; i < 12; ++i)
    x[i] = float(i % 5) - 2 + 0.25f * i;
  const void *data[] = {x.data(), b.data(), y.data(), s.data()};
  for (int64_t t = 0; t < l.threads; ++t)
    fused::runThread(l, code.data(), int(code.size()), data, t);
  const std::vector<float> wholeY = y, wholeS = s;
  for (int64_t parts : {2, 3, 4, 5}) {
    std::fill(y.begin(), y.end(), -7.0f);
    std::fill(s.begin(), s.end(), -7.0f);
    std::vector<float> partials(l.outputs * parts * l.threads, -7.0f);
    for (int64_t at = 0; at < l.threads * parts; ++at)
      fused::runPart(l, code.data(), int(code.size()), data, at, parts,
                     partials.data());
    for (int64_t t = 0; t < l.threads; ++t)
      fused::sumParts(l, data, t, parts, partials.data());
    EXPECT_EQ(y, wholeY) << parts << " parts";
    EXPECT_EQ(s, wholeS) << parts << " parts";
  }
}

TEST(FusedProgram, OperandsOfOtherSizesAreRefused) {
  std::vector<int64_t> words = reluSum();
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why));
  const int64_t wholeBias[] = {12, 12, 12, 3};
  EXPECT_FALSE(fused::fitsOperands(l, wholeBias, 4, why));
  EXPECT_EQ(why, "an element program's operand 1 has 3 elements, not 12");
  const int64_t three[] = {12, 3, 12};
  EXPECT_FALSE(fused::fitsOperands(l, three, 3, why));
}

/// What whale_rt_fused reads on every call: the operands' records, their
/// types among them, not the instructions (a device reads those once).
TEST(FusedProgram, OperandsOnlyStopsBeforeTheInstructions) {
  std::vector<int64_t> words = reluSum();
  words[10] = fused::Bf16Operand; // x stored in bf16
  words[26] = 6;                  // an instruction naming no register
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why,
                           /*operandsOnly=*/true))
      << why;
  EXPECT_TRUE(code.empty());
  EXPECT_EQ(l.inputs, 2);
  EXPECT_EQ(l.outputs, 2);
  EXPECT_TRUE(l.bf16[0]);
  EXPECT_FALSE(l.bf16[1]);
  EXPECT_FALSE(l.bf16[2]);
  EXPECT_FALSE(fused::parse(words.data(), words.size(), l, code, why));
  EXPECT_NE(why.find("names no register"), std::string::npos) << why;
}

/// softmax(2 x) over rows of `width`, its result stored as `type`.
std::vector<int64_t> scaledSoftmax(int64_t width, int64_t type) {
  return {fused::kMagic,
          2,
          3,
          width, // rank, extents
          1,
          1,
          3,
          2, // inputs, outputs, registers, code
          1,
          1,
          fused::F32Operand, // x reads both
          1,
          1,
          0,
          2,
          type, // p keeps both: register 2
          fused::Softmax,
          0,
          2, // the row op: result 0, register 2
          fused::Const,
          1,
          0x40000000,
          -1,
          -1, // 2.0f
          fused::Mul,
          2,
          0,
          1,
          -1};
}

/// A row op's result in bf16: the row is kept in f32 apart from it
/// between the passes, and rounded once as it is stored, so each element
/// is the f32 program's rounded (never a rounded value worked on again).
/// A kernel keeps kMaxRoundedRow elements of a row apart, no more.
TEST(FusedProgram, RoundedRowsAreTheF32RowsRounded) {
  const int64_t width = 37;
  std::vector<float> x(3 * width);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 0.37f * float(i % 11) - 1.3f + 1e-3f * float(i);
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  std::vector<int64_t> f32 = scaledSoftmax(width, fused::F32Operand);
  ASSERT_TRUE(fused::parse(f32.data(), f32.size(), l, code, why)) << why;
  EXPECT_FALSE(fused::roundsRow(l));
  std::vector<float> want(x.size(), -7);
  const void *wantData[] = {x.data(), want.data()};
  for (int64_t row = 0; row < l.threads; ++row)
    fused::runRow(l, code.data(), int(code.size()), wantData, row);

  std::vector<int64_t> bf16 = scaledSoftmax(width, fused::Bf16Operand);
  ASSERT_TRUE(fused::parse(bf16.data(), bf16.size(), l, code, why)) << why;
  EXPECT_TRUE(fused::roundsRow(l));
  std::vector<uint16_t> got(x.size(), 0xffff);
  const void *gotData[] = {x.data(), got.data()};
  for (int64_t row = 0; row < l.threads; ++row)
    fused::runRow(l, code.data(), int(code.size()), gotData, row);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(got[i], whale::rt::bf16Bits(want[i])) << i;

  std::vector<int64_t> widest =
      scaledSoftmax(fused::kMaxRoundedRow, fused::Bf16Operand);
  EXPECT_TRUE(fused::parse(widest.data(), widest.size(), l, code, why)) << why;
  std::vector<int64_t> wider =
      scaledSoftmax(fused::kMaxRoundedRow + 1, fused::Bf16Operand);
  EXPECT_FALSE(fused::parse(wider.data(), wider.size(), l, code, why));
  EXPECT_EQ(why, "an element program's row op rounds rows wider than 8192 "
                 "elements");
  // An f32 result keeps its row in place, however wide.
  wider = scaledSoftmax(fused::kMaxRoundedRow + 1, fused::F32Operand);
  EXPECT_TRUE(fused::parse(wider.data(), wider.size(), l, code, why)) << why;
}

TEST(FusedProgram, WordsThatAreNoProgramSayWhy) {
  const std::vector<int64_t> good = reluSum();
  struct Bad {
    std::vector<int64_t> words;
    std::string why;
  };
  std::vector<Bad> bad;
  auto edited = [&](size_t at, int64_t v) {
    std::vector<int64_t> w = good;
    w[at] = v;
    return w;
  };
  bad.push_back({edited(0, 42), "not an element program"});
  bad.push_back({edited(1, 9), "not an element program"});
  bad.push_back({edited(2, 0), "extents are cut short, not positive"});
  bad.push_back({edited(3, int64_t(1) << 62), "extents are cut short"});
  bad.push_back({edited(6, 99), "counts are out of range"});
  bad.push_back({edited(17, 6), "result has no register"});
  bad.push_back({edited(10, 2), "input has no type it knows"});
  bad.push_back({edited(18, -1), "result has no type it knows"});
  bad.push_back({edited(24, 3), "row op is none it knows"});
  bad.push_back({edited(24, fused::Softmax), "row op is none it knows, or "
                                              "beside sums"});
  bad.push_back({edited(26, 6), "names no register"});
  bad.push_back({edited(25, fused::NumOps), "names no register"});
  bad.push_back({{good.begin(), good.end() - 1}, "instructions are cut short"});
  std::vector<int64_t> longer = good;
  longer.push_back(0);
  bad.push_back({longer, "words after its instructions"});
  std::vector<int64_t> sums = good; // the sums over different dimensions
  sums[14] = 1;
  sums[15] = 0;
  bad.push_back({sums, "sum over different dimensions"});
  for (const Bad &b : bad) {
    fused::Layout l;
    std::vector<fused::Instr> code;
    std::string why;
    EXPECT_FALSE(fused::parse(b.words.data(), b.words.size(), l, code, why))
        << b.why;
    EXPECT_NE(why.find(b.why), std::string::npos) << why;
  }
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  EXPECT_FALSE(fused::parse(nullptr, 0, l, code, why));
}

} // namespace
