//===- GroupedAttentionTest.cpp - keys shared by groups of query heads ---===//
//
// Grouped-query attention (Llama 2 70B, Llama 3, Mistral: fewer key and
// value heads than query heads) is attention over the keys and values
// repeated for each query head of their group, as transformers' repeat_kv
// writes it. The CPU's kernels read the shared heads in place; here they
// are held to that definition, written out with plain loops over the
// ungrouped kernel (itself checked against the composed ops in
// AttentionTest), forward and backward, head-major and sequence-major,
// causal or not. So is the repetition other devices run
// (runtime/ops/GroupedKeys.h), on the CPU.
//
//===----------------------------------------------------------------------===//

#include "AttentionTesting.h"

#include "runtime/ops/GroupedKeys.h"

using namespace whale::rt;
using namespace whale::rt::testing;

namespace {

size_t count(const Shape &s) { return static_cast<size_t>(numElements(s)); }

/// A shape as [outer, heads, inner] around its heads' axis.
struct AroundHeads {
  size_t outer = 1, heads = 1, inner = 1;
  AroundHeads(const Shape &s, size_t axis) {
    for (size_t d = 0; d < s.size(); ++d)
      (d < axis    ? outer
       : d == axis ? heads
                   : inner) *= static_cast<size_t>(s[d]);
  }
};

/// transformers' repeat_kv: each of kv's heads `group` times in a row.
std::vector<float> repeatKv(const std::vector<float> &kv, const Shape &s,
                            size_t axis, size_t group) {
  AroundHeads a(s, axis);
  std::vector<float> wide(kv.size() * group);
  for (size_t o = 0; o < a.outer; ++o)
    for (size_t h = 0; h < a.heads * group; ++h)
      for (size_t i = 0; i < a.inner; ++i)
        wide[(o * a.heads * group + h) * a.inner + i] =
            kv[(o * a.heads + h / group) * a.inner + i];
  return wide;
}

/// The gradient of repeatKv: each group's heads summed, in order.
std::vector<float> sumGroups(const std::vector<float> &wide, const Shape &s,
                             size_t axis, size_t group) {
  AroundHeads a(s, axis);
  std::vector<float> kv(wide.size() / group, 0.0f);
  for (size_t o = 0; o < a.outer; ++o)
    for (size_t h = 0; h < a.heads * group; ++h)
      for (size_t i = 0; i < a.inner; ++i)
        kv[(o * a.heads + h / group) * a.inner + i] +=
            wide[(o * a.heads * group + h) * a.inner + i];
  return kv;
}

struct Case {
  Shape q, k; // k's heads divide q's
  bool sequenceMajor;
  bool causal; // then as many keys as queries
};

class GroupedAttention : public ::testing::TestWithParam<Case> {};

TEST_P(GroupedAttention, IsAttentionOverRepeatedKeysAndValues) {
  const Case c = GetParam();
  CpuDevice &dev = testDevice();
  const AttentionForm form{c.causal, c.sequenceMajor};
  const size_t axis = c.q.size() - (c.sequenceMajor ? 2 : 3);
  const size_t group = static_cast<size_t>(c.q[axis] / c.k[axis]);
  Shape wideShape = c.k;
  wideShape[axis] = c.q[axis];
  const double scale = 1.0 / std::sqrt(double(c.q.back()));
  std::vector<float> q = randomFloats(count(c.q), 1),
                     k = randomFloats(count(c.k), 2),
                     v = randomFloats(count(c.k), 3),
                     dout = randomFloats(count(c.q), 4);
  const std::vector<float> wk = repeatKv(k, c.k, axis, group),
                           wv = repeatKv(v, c.k, axis, group);

  // Forward: the grouped kernel, the definition, and the repetition.
  std::vector<float> grouped(count(c.q)), reference(count(c.q)),
      repeated(count(c.q));
  ASSERT_TRUE(dev.attention(in(q, c.q), in(k, c.k), in(v, c.k), scale, form,
                            out(grouped, c.q)));
  ASSERT_TRUE(dev.attention(in(q, c.q), in(wk, wideShape), in(wv, wideShape),
                            scale, form, out(reference, c.q)));
  ASSERT_TRUE(attentionOverRepeatedKeys(dev, in(q, c.q), in(k, c.k), in(v, c.k),
                                        scale, form, out(repeated, c.q)));
  expectClose(grouped, reference, "out");
  expectClose(repeated, reference, "out, repeated");

  // Backward: dq as the repeated attention's, dk and dv its group sums.
  const size_t nq = count(c.q), nk = count(c.k);
  std::vector<float> dq(nq), dk(nk), dv(nk), rq(nq), rk(wk.size()),
      rv(wv.size()), pq(nq), pk(nk), pv(nk);
  ASSERT_TRUE(dev.attentionBackward(
      in(q, c.q), in(k, c.k), in(v, c.k), in(grouped, c.q), in(dout, c.q),
      scale, form, out(dq, c.q), out(dk, c.k), out(dv, c.k)));
  ASSERT_TRUE(dev.attentionBackward(in(q, c.q), in(wk, wideShape),
                                    in(wv, wideShape), in(reference, c.q),
                                    in(dout, c.q), scale, form, out(rq, c.q),
                                    out(rk, wideShape), out(rv, wideShape)));
  ASSERT_TRUE(attentionBackwardOverRepeatedKeys(
      dev, in(q, c.q), in(k, c.k), in(v, c.k), in(repeated, c.q), in(dout, c.q),
      scale, form, out(pq, c.q), out(pk, c.k), out(pv, c.k)));
  const std::vector<float> sk = sumGroups(rk, c.k, axis, group),
                           sv = sumGroups(rv, c.k, axis, group);
  expectClose(dq, rq, "dq");
  expectClose(dk, sk, "dk");
  expectClose(dv, sv, "dv");
  expectClose(pq, rq, "dq, repeated");
  expectClose(pk, sk, "dk, repeated");
  expectClose(pv, sv, "dv, repeated");
}

INSTANTIATE_TEST_SUITE_P(
    HeadsAndLayouts, GroupedAttention,
    ::testing::Values(
        // Two query heads a key head, causal or not; keys as long as
        // queries or not.
        Case{{2, 4, 7, 5}, {2, 2, 7, 5}, false, true},
        Case{{2, 4, 7, 5}, {2, 2, 7, 5}, false, false},
        Case{{2, 4, 7, 5}, {2, 2, 9, 5}, false, false},
        // Multi-query attention over three blocks of query rows.
        Case{{1, 4, 150, 8}, {1, 1, 150, 8}, false, true},
        Case{{1, 4, 150, 8}, {1, 1, 150, 8}, false, false},
        // Sequence-major [B, T, H, E], as a projection's output is.
        Case{{2, 7, 6, 4}, {2, 7, 2, 4}, true, true},
        Case{{2, 7, 6, 4}, {2, 5, 3, 4}, true, false},
        // One key head a query head: the ungrouped kernel's own case.
        Case{{2, 3, 7, 5}, {2, 3, 7, 5}, false, true}));

TEST(GroupedAttention, KeyHeadsMustDivideQueryHeads) {
  CpuDevice &dev = testDevice();
  const Shape sq{1, 4, 6, 4}, sk{1, 3, 6, 4};
  std::vector<float> q(count(sq), 0.5f), k(count(sk), 0.5f), o(count(sq));
  Status st = dev.attention(in(q, sq), in(k, sk), in(k, sk), 0.5,
                            AttentionForm{false}, out(o, sq));
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("k's and v's heads may divide q's"),
            std::string::npos)
      << st.message();
  // Nor may any other leading dimension differ.
  const Shape sb{2, 2, 6, 4};
  std::vector<float> b(count(sb), 0.5f);
  EXPECT_FALSE(dev.attention(in(q, sq), in(b, sb), in(b, sb), 0.5,
                             AttentionForm{false}, out(o, sq)));
}

} // namespace
