//===- ElementMath.h - what one GPU thread computes --------------*- C++
//-*-===//
//
// The body of every kernel that gives each thread one output element (all
// but the row kernels: softmax over the last axis, layernorm, cross
// entropy). The CUDA kernels are grid loops over these functions, and a CPU
// unit test runs the same functions over the same index maps against the CPU
// device, so the GPU's arithmetic and indexing are checked on machines
// without a GPU. No CUDA header is needed: nvcc sees __host__ __device__,
// a C++ compiler sees plain inline functions.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_ELEMENTMATH_H
#define WHALE_RUNTIME_CUDA_ELEMENTMATH_H

#include <math.h>

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define WHALE_HD __host__ __device__ inline
#else
#define WHALE_HD inline
#endif

namespace whale::rt::cuda {

/// Up to this many dimensions, the most any whale op produces.
constexpr int kMaxRank = 8;

/// An output's extents and, per operand, the element stride of each output
/// dimension in that operand (0 where the operand is broadcast along it).
struct Strided {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t strideA[kMaxRank] = {};
  int64_t strideB[kMaxRank] = {};
};

/// A big index space (`full`) summed, maxed or spread onto a small one
/// (`part`: the same rank, 1 where a dimension is reduced). strideA and
/// strideB give each full dimension's stride in the operands.
struct Walk {
  int rank = 0;
  int64_t full[kMaxRank] = {};
  int64_t part[kMaxRank] = {};
  int64_t strideA[kMaxRank] = {};
  int64_t strideB[kMaxRank] = {};
};

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

/// x's coordinate along a dimension of `size`, x left with the rest; in 32
/// bits when x is under 2^32, as nearly every index is (a GPU divides
/// 64-bit integers in software, several times slower). A size of 2^32 or
/// more leaves such an x whole as the coordinate.
WHALE_HD int64_t takeCoordinate(int64_t &x, int64_t size) {
  if (static_cast<uint64_t>(x) <= 0xffffffffu) {
    if (static_cast<uint64_t>(size) > 0xffffffffu) {
      const int64_t c = x;
      x = 0;
      return c;
    }
    const uint32_t x32 = static_cast<uint32_t>(x),
                   s32 = static_cast<uint32_t>(size);
    x = x32 / s32;
    return x32 % s32;
  }
  const int64_t c = x % size;
  x /= size;
  return c;
}

/// Element i of the output's offsets into operands a and b.
WHALE_HD void stridedOffsets(const Strided &m, int64_t i, int64_t &oa,
                             int64_t &ob) {
  oa = ob = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t c = takeCoordinate(i, m.size[d]);
    oa += c * m.strideA[d];
    ob += c * m.strideB[d];
  }
}

/// Where element r of part element t's walk lies: in the full space
/// (contiguous) and in the two operands.
struct Offsets {
  int64_t full, a, b;
};
WHALE_HD Offsets walkOffsets(const Walk &w, int64_t t, int64_t r) {
  Offsets o{0, 0, 0};
  int64_t fullStride = 1;
  for (int d = w.rank - 1; d >= 0; --d) {
    const int64_t c = w.part[d] == w.full[d] ? takeCoordinate(t, w.part[d])
                                             : takeCoordinate(r, w.full[d]);
    o.full += c * fullStride;
    o.a += c * w.strideA[d];
    o.b += c * w.strideB[d];
    fullStride *= w.full[d];
  }
  return o;
}

/// op in BinaryOp's order: add, sub, mul, div.
WHALE_HD float applyBinary(int op, float x, float y) {
  switch (op) {
  case 0:
    return x + y;
  case 1:
    return x - y;
  case 2:
    return x * y;
  default:
    return x / y;
  }
}

/// The derivative of (a op b) in operand `which` (0: a), times d.
WHALE_HD float binaryPartial(int op, int which, float a, float b, float d) {
  switch (op) {
  case 0:
    return d;
  case 1:
    return which == 0 ? d : -d;
  case 2:
    return which == 0 ? d * b : d * a;
  default:
    return which == 0 ? d / b : -d * a / (b * b);
  }
}

/// tanh as the CPU's gelu computes it, so both devices round alike.
WHALE_HD float geluTanh(float u) {
  return 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
}

/// op in UnaryOp's order: neg, relu, gelu, tanh, exp, log, sqrt.
WHALE_HD float unaryValue(int op, float v) {
  switch (op) {
  case 0:
    return -v;
  case 1:
    return v > 0 ? v : 0.0f;
  case 2:
    return 0.5f * v *
           (1.0f + geluTanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
  case 3:
    return tanhf(v);
  case 4:
    return expf(v);
  case 5:
    return logf(v);
  default:
    return sqrtf(v);
  }
}

/// dx from x, the forward output y and dy.
WHALE_HD float unaryGradient(int op, float v, float y, float g) {
  switch (op) {
  case 0:
    return -g;
  case 1:
    return v > 0 ? g : 0.0f;
  case 2: {
    float t = geluTanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
    float dInner = kSqrt2OverPi * (1.0f + 3 * kGeluCubic * v * v);
    return g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dInner);
  }
  case 3:
    return g * (1.0f - y * y);
  case 4:
    return g * y;
  case 5:
    return g / v;
  default:
    return g * 0.5f / y;
  }
}

/// Whether element i of [..., rows, cols] scores is masked (a later key).
WHALE_HD bool causallyMasked(int64_t i, int64_t rows, int64_t cols) {
  int64_t j = i % cols, r = (i / cols) % rows;
  return j > r + (cols - rows);
}

/// Gradient element t of one operand of a op b (see Walk).
WHALE_HD float binaryGradientAt(int op, int which, const float *a,
                                const float *b, const float *dout,
                                const Walk &w, int64_t t, int64_t perPart) {
  float sum = 0;
  for (int64_t r = 0; r < perPart; ++r) {
    Offsets o = walkOffsets(w, t, r);
    sum += binaryPartial(op, which, a[o.a], b[o.b], dout[o.full]);
  }
  return sum;
}

/// Kept element t of a reduction (op: sum, mean, max) of x.
WHALE_HD float reduceAt(int op, const float *x, const Walk &w, int64_t t,
                        int64_t count) {
  float acc = op == 2 ? -INFINITY : 0.0f;
  for (int64_t r = 0; r < count; ++r) {
    float v = x[walkOffsets(w, t, r).full];
    acc = op == 2 ? fmaxf(acc, v) : acc + v;
  }
  return op == 1 ? acc / count : acc;
}

/// Writes dx over kept element t's inputs: dout spread (over count for
/// mean), or for max sent to the first maximum only.
WHALE_HD void reduceGradientAt(int op, const float *x, const float *dout,
                               float *dx, const Walk &w, int64_t t,
                               int64_t count) {
  float d = op == 1 ? dout[t] / count : dout[t];
  int64_t winner = -1;
  if (op == 2) {
    float best = -INFINITY;
    for (int64_t r = 0; r < count; ++r) {
      int64_t o = walkOffsets(w, t, r).full;
      if (winner < 0 || x[o] > best) {
        best = x[o];
        winner = o;
      }
    }
  }
  for (int64_t r = 0; r < count; ++r) {
    int64_t o = walkOffsets(w, t, r).full;
    dx[o] = op == 2 ? (o == winner ? d : 0.0f) : d;
  }
}

/// One SGD step of element i; velocity null when momentum is 0.
WHALE_HD void sgdAt(float *p, const float *g, float *velocity, int64_t i,
                    float lr, float momentum, float weightDecay) {
  float step = g[i] + weightDecay * p[i];
  if (velocity) {
    velocity[i] = momentum * velocity[i] + step;
    step = velocity[i];
  }
  p[i] -= lr * step;
}

/// One Adam (AdamW when decoupled) step of element i; c1 and c2 are the
/// bias corrections 1 - beta^step.
WHALE_HD void adamAt(float *p, const float *g, float *m, float *v, int64_t i,
                     float lr, float beta1, float beta2, float eps,
                     float weightDecay, bool decoupled, float c1, float c2) {
  float w = p[i];
  float grad = g[i] + (decoupled ? 0.0f : weightDecay * w);
  m[i] = beta1 * m[i] + (1 - beta1) * grad;
  v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
  float update = (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
  if (decoupled)
    update += weightDecay * w;
  p[i] = w - lr * update;
}

/// A row's log-sum-exp in one pass (the online softmax): the largest value
/// so far and the sum of exp(x - largest), rescaled when a larger value
/// comes. Parts of a row (a thread's, a warp's) merge in any grouping.
/// value() is the CPU's two-pass result where that is finite, and NaN
/// where the CPU's is: a NaN or +inf in the row, or no value above -inf.
struct OnlineLse {
  float m = -INFINITY, s = 0;
  WHALE_HD void add(float x) {
    if (x > m) {
      s = s * expf(m - x) + 1.0f;
      m = x;
    } else if (x != -INFINITY) {
      s += expf(x - m); // NaN stays NaN
    }
  }
  WHALE_HD void merge(const OnlineLse &o) {
    if (o.s == 0) // nothing above -inf there
      return;
    if (s == 0) {
      *this = o;
    } else if (o.m > m) {
      s = s * expf(m - o.m) + o.s;
      m = o.m;
    } else {
      s += o.s * expf(o.m - m);
    }
  }
  WHALE_HD float value() const {
    return s > 0 && m < INFINITY ? m + logf(s) : NAN;
  }
};

} // namespace whale::rt::cuda

#endif
