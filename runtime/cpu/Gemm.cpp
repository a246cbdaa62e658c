//===- Gemm.cpp - matrix products on OpenBLAS -----------------------------===//

#include "runtime/cpu/BlasKernels.h"
#include "runtime/cpu/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace whale::rt::cpu {

namespace {

/// OpenBLAS's pthread build is safe to enter from many threads at once; held
/// to one thread per call, each call runs on the thread that makes it, so a
/// device's GEMM uses exactly its own threads (the bands below) and devices
/// of different thread counts run side by side at their own speeds. (The
/// serial build shares unlocked buffers between callers: it needed one call
/// at a time, process wide.)
/// The kernels are chosen first (BlasKernels.h).
void oneThreadPerCall() {
  static std::once_flag once;
  std::call_once(once, [] {
    blasKernels();
    openblas_set_num_threads(1);
  });
}

void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
              const double *a, int64_t lda, const double *b, int64_t ldb,
              double beta, double *c, int64_t ldc) {
  oneThreadPerCall();
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

/// Extents of op(a) and op(b) and the batch count of a matmul.
struct MatmulDims {
  int64_t batch, m, n, k;
  bool sharedRhs; // b has no batch dimensions
};

template <class T>
MatmulDims matmulDims(const View<const T> &a, const View<const T> &b, bool ta,
                      bool tb) {
  MatmulDims d;
  size_t ra = a.shape.size(), rb = b.shape.size();
  d.m = ta ? a.shape[ra - 1] : a.shape[ra - 2];
  d.k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  d.n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  d.batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i)
    d.batch *= a.shape[i];
  d.sharedRhs = rb == 2;
  return d;
}

} // namespace

void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              float beta, float *c, int64_t ldc) {
  oneThreadPerCall();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

template <class T>
void gemm(CpuDevice &dev, bool transA, bool transB, int64_t m, int64_t n,
          int64_t k, T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
          T beta, T *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  // Rows of C are independent: give each thread a band of them. Row i of
  // op(A) starts at a + i*lda untransposed, at a + i transposed.
  int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, n * k));
  dev.pool().parallelFor(m, grain, [&](int64_t r0, int64_t r1) {
    const T *ab = transA ? a + r0 : a + r0 * lda;
    blasGemm(transA, transB, r1 - r0, n, k, alpha, ab, lda, b, ldb, beta,
             c + r0 * ldc, ldc);
  });
}

template <class T>
void matmul(CpuDevice &dev, View<const T> a, View<const T> b, View<T> out,
            bool transA, bool transB) {
  MatmulDims d = matmulDims(a, b, transA, transB);
  int64_t lda = transA ? d.m : d.k, ldb = transB ? d.k : d.n;
  if (d.sharedRhs && !transA) {
    // [batch, M, K] @ [K, N] is one [batch*M, K] @ [K, N] product.
    gemm<T>(dev, false, transB, d.batch * d.m, d.n, d.k, T(1), a.data, lda,
            b.data, ldb, T(0), out.data, d.n);
    return;
  }
  // Many small products (attention's heads): each thread takes whole
  // products; the gemm inside then runs on that thread alone.
  dev.pool().parallelFor(d.batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      gemm<T>(dev, transA, transB, d.m, d.n, d.k, T(1), a.data + i * d.m * d.k,
              lda, d.sharedRhs ? b.data : b.data + i * d.k * d.n, ldb, T(0),
              out.data + i * d.m * d.n, d.n);
  });
}

template <class T>
void matmulBackward(CpuDevice &dev, View<const T> a, View<const T> b,
                    View<const T> dout, View<T> *da, View<T> *db, bool transA,
                    bool transB) {
  // With out = op(A) op(B): d op(A) = dOut op(B)^T and d op(B) = op(A)^T dOut;
  // a transposed operand takes the transpose of its gradient.
  MatmulDims d = matmulDims(a, b, transA, transB);
  int64_t lda = transA ? d.m : d.k, ldb = transB ? d.k : d.n;
  int64_t aSize = d.m * d.k, bSize = d.k * d.n, oSize = d.m * d.n;
  if (d.batch == 0) {
    if (da)
      std::memset(da->data, 0, sizeof(T) * da->numel());
    if (db)
      std::memset(db->data, 0, sizeof(T) * db->numel());
    return;
  }
  // A shared right-hand side sums its gradient over the batch: with an
  // untransposed lhs that is one product over batch * M rows.
  bool foldShared = d.sharedRhs && !transA;
  if (db && foldShared) {
    if (!transB) // dB[K,N] = A^T dOut over all rows
      gemm<T>(dev, true, false, d.k, d.n, d.batch * d.m, T(1), a.data, lda,
              dout.data, d.n, T(0), db->data, d.n);
    else // dB[N,K] = dOut^T A
      gemm<T>(dev, true, false, d.n, d.k, d.batch * d.m, T(1), dout.data, d.n,
              a.data, lda, T(0), db->data, d.k);
  }
  auto one = [&](int64_t i) {
    const T *ai = a.data + i * aSize;
    const T *bi = d.sharedRhs ? b.data : b.data + i * bSize;
    const T *gi = dout.data + i * oSize;
    if (da) {
      T *dai = da->data + i * aSize;
      if (!transA) // dA[M,K] = dOut[M,N] op(B)^T
        gemm<T>(dev, false, !transB, d.m, d.k, d.n, T(1), gi, d.n, bi, ldb,
                T(0), dai, d.k);
      else // dA[K,M] = op(B)[K,N] dOut^T
        gemm<T>(dev, transB, true, d.k, d.m, d.n, T(1), bi, ldb, gi, d.n, T(0),
                dai, d.m);
    }
    if (db && !foldShared) {
      T *dbi = d.sharedRhs ? db->data : db->data + i * bSize;
      // A shared rhs with a transposed lhs accumulates in order (serially).
      T beta = d.sharedRhs && i > 0 ? T(1) : T(0);
      if (!transB) // dB[K,N] = op(A)^T dOut
        gemm<T>(dev, !transA, false, d.k, d.n, d.m, T(1), ai, lda, gi, d.n,
                beta, dbi, d.n);
      else // dB[N,K] = dOut^T op(A)
        gemm<T>(dev, true, transA, d.n, d.k, d.m, T(1), gi, d.n, ai, lda, beta,
                dbi, d.k);
    }
  };
  if (d.sharedRhs && db && !foldShared) {
    for (int64_t i = 0; i < d.batch; ++i)
      one(i);
    return;
  }
  // Independent products: whole ones per thread.
  dev.pool().parallelFor(d.batch, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      one(i);
  });
}

#define WHALE_INSTANTIATE(T)                                                   \
  template void gemm<T>(CpuDevice &, bool, bool, int64_t, int64_t, int64_t, T, \
                        const T *, int64_t, const T *, int64_t, T, T *,        \
                        int64_t);                                              \
  template void matmul<T>(CpuDevice &, View<const T>, View<const T>, View<T>,  \
                          bool, bool);                                         \
  template void matmulBackward<T>(CpuDevice &, View<const T>, View<const T>,   \
                                  View<const T>, View<T> *, View<T> *, bool,   \
                                  bool);
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
#undef WHALE_INSTANTIATE

} // namespace whale::rt::cpu
