//===- GemmPlan.h - whale matmuls as cuBLAS calls ----------------*- C++
//-*-===//
//
// Row-major C = op(A) op(B) (batched, B possibly shared by the batch) and its
// gradients, as the column-major strided-batched GEMMs cuBLAS runs:
// C^T = op(B)^T op(A)^T, so the operands swap and each keeps its row-major
// width as its leading dimension. Header-only and free of CUDA, so a CPU
// unit test runs each planned call through a reference column-major GEMM
// and compares with the CPU device.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_GEMMPLAN_H
#define WHALE_RUNTIME_CUDA_GEMMPLAN_H

#include "runtime/core/Tensor.h"

#include <vector>

namespace whale::rt::cuda {

/// Which buffer a GEMM operand or result is.
enum class Operand { A, B, C, DA, DB };

/// One cublasSgemmStridedBatched(transa, transb, m, n, k, 1, first, ldFirst,
/// strideFirst, second, ldSecond, strideSecond, beta, out, ldOut, strideOut,
/// batch) with element offsets into each buffer.
struct GemmCall {
  bool transFirst, transSecond;
  int64_t m, n, k;
  Operand first, second, out;
  int64_t offFirst = 0, offSecond = 0, offOut = 0;
  int64_t ldFirst, ldSecond, ldOut;
  int64_t strideFirst, strideSecond, strideOut;
  int64_t batch;
  float beta = 0;
};

/// Row-major out[M, N] (x batch) = beta out + op(x)[M, K] op(y)[K, N].
inline GemmCall rowMajorGemm(bool tx, bool ty, int64_t m, int64_t n, int64_t k,
                             Operand x, int64_t strideX, Operand y,
                             int64_t strideY, Operand out, int64_t strideOut,
                             int64_t batch, float beta = 0) {
  GemmCall c;
  c.transFirst = ty;
  c.transSecond = tx;
  c.m = n;
  c.n = m;
  c.k = k;
  c.first = y;
  c.ldFirst = ty ? k : n;
  c.strideFirst = strideY;
  c.second = x;
  c.ldSecond = tx ? m : k;
  c.strideSecond = strideX;
  c.out = out;
  c.ldOut = n;
  c.strideOut = strideOut;
  c.batch = batch;
  c.beta = beta;
  return c;
}

struct MatmulDims {
  int64_t m, n, k, batch;
  bool shared; ///< b is one matrix for every batch element
};

inline MatmulDims matmulDims(const Shape &sa, const Shape &sb, bool ta,
                             bool tb) {
  size_t ra = sa.size(), rb = sb.size();
  MatmulDims d;
  d.m = ta ? sa[ra - 1] : sa[ra - 2];
  d.k = ta ? sa[ra - 2] : sa[ra - 1];
  d.n = tb ? sb[rb - 2] : sb[rb - 1];
  d.batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i)
    d.batch *= sa[i];
  d.shared = rb == 2;
  return d;
}

/// C = op(A) op(B).
inline std::vector<GemmCall> planMatmul(const MatmulDims &d, bool ta, bool tb) {
  if (d.shared && !ta) // one GEMM over every row of the batch
    return {rowMajorGemm(false, tb, d.batch * d.m, d.n, d.k, Operand::A, 0,
                         Operand::B, 0, Operand::C, 0, 1)};
  return {rowMajorGemm(ta, tb, d.m, d.n, d.k, Operand::A, d.m * d.k, Operand::B,
                       d.shared ? 0 : d.k * d.n, Operand::C, d.m * d.n,
                       d.batch)};
}

/// dA and dB (each when asked for) from dC = Operand::C.
inline std::vector<GemmCall> planMatmulBackward(const MatmulDims &d, bool ta,
                                                bool tb, bool wantA,
                                                bool wantB) {
  const int64_t sA = d.m * d.k, sB = d.shared ? 0 : d.k * d.n, sC = d.m * d.n;
  std::vector<GemmCall> calls;
  if (wantA && d.shared && !ta) // one GEMM over every row, as the forward
    calls.push_back(rowMajorGemm(false, !tb, d.batch * d.m, d.k, d.n,
                                 Operand::C, 0, Operand::B, 0, Operand::DA, 0,
                                 1));
  else if (wantA) // dA = dC op(B)^T, or op(B) dC^T when A is transposed
    calls.push_back(ta ? rowMajorGemm(tb, true, d.k, d.m, d.n, Operand::B, sB,
                                      Operand::C, sC, Operand::DA, sA, d.batch)
                       : rowMajorGemm(false, !tb, d.m, d.k, d.n, Operand::C, sC,
                                      Operand::B, sB, Operand::DA, sA,
                                      d.batch));
  if (!wantB)
    return calls;
  if (!d.shared) {
    calls.push_back(tb ? rowMajorGemm(true, ta, d.n, d.k, d.m, Operand::C, sC,
                                      Operand::A, sA, Operand::DB, sB, d.batch)
                       : rowMajorGemm(!ta, false, d.k, d.n, d.m, Operand::A, sA,
                                      Operand::C, sC, Operand::DB, sB,
                                      d.batch));
  } else if (!ta) { // the batch's rows folded into the inner dimension
    calls.push_back(
        tb ? rowMajorGemm(true, false, d.n, d.k, d.batch * d.m, Operand::C, 0,
                          Operand::A, 0, Operand::DB, 0, 1)
           : rowMajorGemm(true, false, d.k, d.n, d.batch * d.m, Operand::A, 0,
                          Operand::C, 0, Operand::DB, 0, 1));
  } else { // A transposed per batch element: accumulate one GEMM each
    for (int64_t i = 0; i < d.batch; ++i) {
      GemmCall c =
          tb ? rowMajorGemm(true, true, d.n, d.k, d.m, Operand::C, 0,
                            Operand::A, 0, Operand::DB, 0, 1, i ? 1.0f : 0.0f)
             : rowMajorGemm(false, false, d.k, d.n, d.m, Operand::A, 0,
                            Operand::C, 0, Operand::DB, 0, 1, i ? 1.0f : 0.0f);
      // Element i of the batch: A's and dC's i-th matrices.
      (c.first == Operand::A ? c.offFirst : c.offSecond) = i * sA;
      (c.first == Operand::C ? c.offFirst : c.offSecond) = i * sC;
      calls.push_back(c);
    }
  }
  return calls;
}

/// Whether some call adds to `out` (beta 1) what an earlier one wrote: the
/// result is then a sum of GEMMs, to be kept in fp32 until the last.
inline bool accumulates(const std::vector<GemmCall> &calls, Operand out) {
  for (const GemmCall &c : calls)
    if (c.out == out && c.beta != 0)
      return true;
  return false;
}

} // namespace whale::rt::cuda

#endif
