//===- ReduceLayoutTest.cpp - reductions, transpose, slice, concat --------===//

#include "GradCheck.h"

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

Shape reducedShape(const Shape &s, const std::vector<int64_t> &axes) {
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) ==
        axes.end())
      out.push_back(s[i]);
  return out;
}

struct ReduceCase {
  ReduceOp op;
  std::vector<int64_t> axes;
};

void PrintTo(const ReduceCase &c, std::ostream *os) {
  *os << opName(c.op) << " over " << c.axes.size() << " axes";
}

class Reduce : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(Reduce, GradientsMatchFiniteDifferences) {
  const ReduceCase &c = GetParam();
  Shape s = {3, 4, 5}, o = reducedShape(s, c.axes);
  // Distinct values keep the maximum unique, where max is differentiable.
  Vec x = randomVec(60, -1, 1, 9);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] += 0.01 * static_cast<double>(i);
  gradCheck(
      {x},
      [&](const std::vector<Vec> &in) {
        Vec out(numElements(o));
        std::vector<int64_t> arg(out.size());
        reduce<double>(testDevice(), c.op, cview(in[0], s), c.axes,
                       mview(out, o), arg.data());
        return out;
      },
      [&](const std::vector<Vec> &in, const Vec &dout) {
        Vec out(numElements(o)), dx(60);
        std::vector<int64_t> arg(out.size());
        reduce<double>(testDevice(), c.op, cview(in[0], s), c.axes,
                       mview(out, o), arg.data());
        reduceBackward<double>(testDevice(), c.op, s, c.axes, cview(dout, o),
                               arg.data(), mview(dx, s));
        return std::vector<Vec>{dx};
      });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Reduce,
    ::testing::Values(
        ReduceCase{ReduceOp::Sum, {1}}, ReduceCase{ReduceOp::Sum, {0, 2}},
        ReduceCase{ReduceOp::Mean, {0, 1, 2}}, ReduceCase{ReduceOp::Mean, {2}},
        ReduceCase{ReduceOp::Max, {1}}, ReduceCase{ReduceOp::Max, {0, 1, 2}}),
    [](const ::testing::TestParamInfo<ReduceCase> &info) {
      std::string axes;
      for (int64_t a : info.param.axes)
        axes += std::to_string(a);
      return opName(info.param.op) + "_over_" + axes;
    });

TEST(Reduce, KnownSums) {
  Shape s = {2, 3};
  Vec x = {1, 2, 3, 4, 5, 6}, rows(2), cols(3), all(1);
  reduce<double>(testDevice(), ReduceOp::Sum, cview(x, s), {1},
                 mview(rows, {2}), nullptr);
  reduce<double>(testDevice(), ReduceOp::Mean, cview(x, s), {0},
                 mview(cols, {3}), nullptr);
  reduce<double>(testDevice(), ReduceOp::Max, cview(x, s), {0, 1},
                 mview(all, {}), nullptr);
  EXPECT_EQ(rows, (Vec{6, 15}));
  EXPECT_EQ(cols, (Vec{2.5, 3.5, 4.5}));
  EXPECT_EQ(all, (Vec{6}));
}

TEST(Transpose, PermutesAndInverts) {
  Shape s = {2, 3, 4}, t = {4, 2, 3};
  std::vector<int64_t> perm = {2, 0, 1};
  Vec x = randomVec(24, -1, 1, 10), y(24), back(24);
  transpose<double>(testDevice(), cview(x, s), perm, mview(y, t));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(y[c * 6 + a * 3 + b], x[a * 12 + b * 4 + c]);
  transpose<double>(testDevice(), cview(y, t), inversePermutation(perm),
                    mview(back, s));
  EXPECT_EQ(back, x);
}

TEST(Slice, GradientsAlongAMiddleAxis) {
  Shape s = {2, 5, 3}, o = {2, 2, 3};
  gradCheck(
      {randomVec(30, -1, 1, 11)},
      [&](const std::vector<Vec> &in) {
        Vec out(12);
        slice<double>(testDevice(), cview(in[0], s), 1, 2, mview(out, o));
        return out;
      },
      [&](const std::vector<Vec> &, const Vec &dout) {
        Vec dx(30);
        sliceBackward<double>(testDevice(), cview(dout, o), 1, 2, mview(dx, s));
        return std::vector<Vec>{dx};
      });
}

TEST(Concat, GradientsSplitBack) {
  Shape a = {2, 2, 3}, b = {2, 4, 3}, o = {2, 6, 3};
  gradCheck(
      {randomVec(12, -1, 1, 12), randomVec(24, -1, 1, 13)},
      [&](const std::vector<Vec> &in) {
        Vec out(36);
        concat<double>(testDevice(), {cview(in[0], a), cview(in[1], b)}, 1,
                       mview(out, o));
        return out;
      },
      [&](const std::vector<Vec> &in, const Vec &dout) {
        Vec da(12), db(24);
        std::vector<View<double>> grads = {mview(da, a), mview(db, b)};
        concatBackward<double>(testDevice(), cview(dout, o), 1, grads);
        return std::vector<Vec>{da, db};
      });
}

} // namespace
