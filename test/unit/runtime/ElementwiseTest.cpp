//===- ElementwiseTest.cpp - broadcasting binary ops, unary ops, masks ----===//

#include "GradCheck.h"

#include <limits>

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

struct BinaryCase {
  BinaryOp op;
  Shape a, b, out;
};

void PrintTo(const BinaryCase &c, std::ostream *os) {
  *os << opName(c.op) << " " << shapeName(c.a) << ", " << shapeName(c.b);
}

class Binary : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(Binary, ForwardBroadcastsLikeNumPy) {
  const BinaryCase &c = GetParam();
  Vec a = randomVec(numElements(c.a), 0.5, 2, 1),
      b = randomVec(numElements(c.b), 0.5, 2, 2);
  Vec out(numElements(c.out));
  binary<double>(testDevice(), c.op, cview(a, c.a), cview(b, c.b),
                 mview(out, c.out));
  // Reference: index each operand by the broadcast rule directly.
  Shape o = c.out;
  for (int64_t i = 0; i < numElements(o); ++i) {
    auto at = [&](const Shape &s) {
      int64_t idx = 0, stride = 1, rest = i;
      for (int64_t d = static_cast<int64_t>(o.size()) - 1; d >= 0; --d) {
        int64_t coord = rest % o[d];
        rest /= o[d];
        int64_t sd = d - (static_cast<int64_t>(o.size()) -
                          static_cast<int64_t>(s.size()));
        if (sd >= 0) {
          idx += (s[sd] == 1 ? 0 : coord) * stride;
          stride *= s[sd];
        }
      }
      return idx;
    };
    double x = a[at(c.a)], y = b[at(c.b)];
    double want = c.op == BinaryOp::Add   ? x + y
                  : c.op == BinaryOp::Sub ? x - y
                  : c.op == BinaryOp::Mul ? x * y
                                          : x / y;
    ASSERT_NEAR(out[i], want, 1e-14) << i;
  }
}

TEST_P(Binary, GradientsSumOverBroadcastDimensions) {
  const BinaryCase &c = GetParam();
  gradCheck(
      {randomVec(numElements(c.a), 0.5, 2, 3),
       randomVec(numElements(c.b), 0.5, 2, 4)},
      [&](const std::vector<Vec> &in) {
        Vec out(numElements(c.out));
        binary<double>(testDevice(), c.op, cview(in[0], c.a), cview(in[1], c.b),
                       mview(out, c.out));
        return out;
      },
      [&](const std::vector<Vec> &in, const Vec &dout) {
        Vec da(in[0].size()), db(in[1].size());
        View<double> va = mview(da, c.a), vb = mview(db, c.b);
        binaryBackward<double>(testDevice(), c.op, cview(in[0], c.a),
                               cview(in[1], c.b), cview(dout, c.out), &va, &vb);
        return std::vector<Vec>{da, db};
      });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Binary,
    ::testing::Values(BinaryCase{BinaryOp::Add, {3, 4}, {3, 4}, {3, 4}},
                      BinaryCase{BinaryOp::Add, {3, 4}, {4}, {3, 4}},
                      BinaryCase{BinaryOp::Sub, {3, 1}, {1, 4}, {3, 4}},
                      BinaryCase{BinaryOp::Mul, {2, 3, 4}, {}, {2, 3, 4}},
                      BinaryCase{BinaryOp::Mul, {2, 1, 4}, {3, 1}, {2, 3, 4}},
                      BinaryCase{BinaryOp::Div, {3, 4}, {3, 4}, {3, 4}},
                      BinaryCase{BinaryOp::Div, {}, {2, 5}, {2, 5}}),
    [](const ::testing::TestParamInfo<BinaryCase> &info) {
      return opName(info.param.op) + "_" + shapeName(info.param.a) + "_" +
             shapeName(info.param.b);
    });

class Unary : public ::testing::TestWithParam<UnaryOp> {};

TEST_P(Unary, GradientsMatchFiniteDifferences) {
  UnaryOp op = GetParam();
  Shape s = {3, 7};
  // Positive inputs keep log and sqrt defined; relu's kink at 0 is avoided
  // by mixing signs away from it.
  Vec x = randomVec(21, 0.2, 2, 5);
  if (op != UnaryOp::Log && op != UnaryOp::Sqrt)
    for (size_t i = 0; i < x.size(); i += 2)
      x[i] = -x[i];
  gradCheck(
      {x},
      [&](const std::vector<Vec> &in) {
        Vec y(in[0].size());
        unary<double>(testDevice(), op, cview(in[0], s), mview(y, s));
        return y;
      },
      [&](const std::vector<Vec> &in, const Vec &dy) {
        Vec y(in[0].size()), dx(in[0].size());
        unary<double>(testDevice(), op, cview(in[0], s), mview(y, s));
        unaryBackward<double>(testDevice(), op, cview(in[0], s), cview(y, s),
                              cview(dy, s), mview(dx, s));
        return std::vector<Vec>{dx};
      });
}

INSTANTIATE_TEST_SUITE_P(All, Unary,
                         ::testing::Values(UnaryOp::Neg, UnaryOp::Relu,
                                           UnaryOp::Gelu, UnaryOp::Tanh,
                                           UnaryOp::Exp, UnaryOp::Log,
                                           UnaryOp::Sqrt),
                         [](const ::testing::TestParamInfo<UnaryOp> &info) {
                           return opName(info.param);
                         });

TEST(Unary, GeluKnownValues) {
  Shape s = {3};
  Vec x = {-1.0, 0.0, 1.0}, y(3);
  unary<double>(testDevice(), UnaryOp::Gelu, cview(x, s), mview(y, s));
  // tanh-form GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  EXPECT_NEAR(y[0], -0.15880800939172324, 1e-12);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_NEAR(y[2], 0.8411919906082768, 1e-12);
}

TEST(CausalMask, MasksTheFutureAndItsGradient) {
  Shape s = {2, 3, 4}; // T = 3 queries over S = 4 keys: one past key
  Vec x = randomVec(24, -1, 1, 6), y(24);
  causalMask<double>(testDevice(), cview(x, s), mview(y, s));
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) {
        double v = y[b * 12 + i * 4 + j];
        if (j <= i + 1)
          EXPECT_EQ(v, x[b * 12 + i * 4 + j]);
        else
          EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
      }
  Vec dy = randomVec(24, -1, 1, 7), dx(24);
  causalMaskBackward<double>(testDevice(), cview(dy, s), mview(dx, s));
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(dx[i], std::isinf(y[i]) ? 0.0 : dy[i]);
}

} // namespace
