//===- LtGemmPlan.h - planned GEMMs as cuBLASLt matmuls ---------*- C++ -*-===//
//
// A planned call (GemmPlan.h) in the terms cuBLASLt describes a matmul in:
// one layout per matrix (rows and columns as stored, the leading dimension,
// the batch and its stride) and the key an algorithm is chosen and cached
// by. cuBLASLt picks an algorithm for a shape through its heuristics, which
// cost tens of microseconds a call; a step repeats the same few dozen
// shapes, so the choice is made once per key. Header-only and free of
// CUDA, so a CPU unit test walks the layouts through a reference GEMM.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_LTGEMMPLAN_H
#define WHALE_RUNTIME_CUDA_LTGEMMPLAN_H

#include "runtime/cuda/GemmPlan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>

namespace whale::rt::cuda {

/// One matrix of a cuBLASLt matmul: column-major `rows` x `cols` as stored
/// (before its operation), `ld` apart, `batch` of them `stride` apart.
struct LtMatrix {
  int64_t rows, cols, ld, batch, stride;
};

/// The matrices of a planned call: `first` is cuBLASLt's A, `second` its B,
/// `out` its C and D (the same buffer: beta adds to what is there).
struct LtLayouts {
  LtMatrix first, second, out;
};

/// cuBLAS's op(A) is m x k, so A is stored k x m when transposed; op(B) is
/// k x n; C is m x n.
inline LtLayouts ltLayouts(const GemmCall &g) {
  LtLayouts l;
  l.first = {g.transFirst ? g.k : g.m, g.transFirst ? g.m : g.k, g.ldFirst,
             g.batch, g.strideFirst};
  l.second = {g.transSecond ? g.n : g.k, g.transSecond ? g.k : g.n, g.ldSecond,
              g.batch, g.strideSecond};
  l.out = {g.m, g.n, g.ldOut, g.batch, g.strideOut};
  return l;
}

/// Whether cuBLASLt runs the call. A batch that shares one operand (stride
/// 0, a weight under a transposed batch) stays with
/// cublasGemmStridedBatchedEx, which documents that case; so does an extent
/// past 32 bits, which neither takes.
inline bool ltRuns(const GemmCall &g) {
  const bool shares = g.batch > 1 && (g.strideFirst == 0 ||
                                      g.strideSecond == 0 || g.strideOut == 0);
  const int64_t most = int64_t(1) << 31;
  return !shares && g.m < most && g.n < most && g.k < most && g.batch < most;
}

/// The alignment cuBLASLt may assume of an address: the largest power of
/// two up to 16 bytes that divides it. An algorithm chosen for aligned
/// operands may not run on a pointer offset into a batch, so the key holds
/// each operand's alignment.
inline int ltAlignment(uintptr_t address) {
  int a = 16;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

/// What a GEMM does to its result as it stores it (cuBLASLt's epilogues):
/// add a bias of one value per row of cuBLAS's column-major result (one per
/// column of the row-major product), then the tanh GELU, keeping the sum
/// before it where asked (GeluAuxBias). In the backward: sum cuBLASLt's A
/// (BgradA: one value per row of the result) or B (BgradB: one per column)
/// over the inner dimension into a bias gradient, or multiply the result
/// by the tanh GELU's derivative at a preactivation laid out as the result
/// (Dgelu).
enum class LtEpilogue : uint8_t {
  None,
  Bias,
  GeluBias,
  GeluAuxBias,
  BgradA,
  BgradB,
  Dgelu
};

/// Whether the epilogue reads a bias or writes a bias gradient (the
/// descriptor's bias pointer), and whether it reads or writes a matrix laid
/// out as the result (its auxiliary pointer).
inline bool ltUsesBias(LtEpilogue e) {
  return e != LtEpilogue::None && e != LtEpilogue::Dgelu;
}
inline bool ltUsesAux(LtEpilogue e) {
  return e == LtEpilogue::GeluAuxBias || e == LtEpilogue::Dgelu;
}

/// The epilogue that sums operand `reduced` of `g` over the GEMM's inner
/// dimension (a linear layer's output gradient, summed over its rows into
/// the bias's gradient): BgradA where it is cuBLASLt's A, BgradB where it
/// is B, None where it is neither or the call is not one plain GEMM.
inline LtEpilogue ltBiasGradient(const GemmCall &g, Operand reduced) {
  if (g.batch != 1 || g.beta != 0)
    return LtEpilogue::None;
  return g.first == reduced    ? LtEpilogue::BgradA
         : g.second == reduced ? LtEpilogue::BgradB
                               : LtEpilogue::None;
}

/// Everything that selects an algorithm: the call's shapes, operations and
/// strides (not its offsets, which the alignments stand for), the element
/// types, whether it adds to its output, and the TF32 setting.
struct LtKey {
  bool transFirst = false, transSecond = false;
  int64_t m = 0, n = 0, k = 0, batch = 0;
  int64_t ldFirst = 0, ldSecond = 0, ldOut = 0;
  int64_t strideFirst = 0, strideSecond = 0, strideOut = 0;
  bool bf16In = false, bf16Out = false, accumulate = false, tf32 = false;
  int alignFirst = 16, alignSecond = 16, alignOut = 16;
  LtEpilogue epilogue = LtEpilogue::None;

  /// Every field, once: equality and the hash both read this list, so a
  /// field added to the key cannot be left out of either.
  auto fields() const {
    return std::make_tuple(
        transFirst, transSecond, m, n, k, batch, ldFirst, ldSecond, ldOut,
        strideFirst, strideSecond, strideOut, bf16In, bf16Out, accumulate, tf32,
        alignFirst, alignSecond, alignOut, static_cast<int>(epilogue));
  }
  bool operator==(const LtKey &o) const { return fields() == o.fields(); }
};

inline LtKey ltKey(const GemmCall &g, bool bf16In, bool bf16Out, bool tf32,
                   uintptr_t first, uintptr_t second, uintptr_t out,
                   LtEpilogue epilogue = LtEpilogue::None) {
  LtKey key;
  key.epilogue = epilogue;
  key.transFirst = g.transFirst;
  key.transSecond = g.transSecond;
  key.m = g.m;
  key.n = g.n;
  key.k = g.k;
  key.batch = g.batch;
  key.ldFirst = g.ldFirst;
  key.ldSecond = g.ldSecond;
  key.ldOut = g.ldOut;
  key.strideFirst = g.strideFirst;
  key.strideSecond = g.strideSecond;
  key.strideOut = g.strideOut;
  key.bf16In = bf16In;
  key.bf16Out = bf16Out;
  key.accumulate = g.beta != 0;
  key.tf32 = tf32 && !bf16In;
  key.alignFirst = ltAlignment(first);
  key.alignSecond = ltAlignment(second);
  key.alignOut = ltAlignment(out);
  return key;
}

struct LtKeyHash {
  size_t operator()(const LtKey &k) const {
    size_t h = 0;
    std::apply(
        [&h](auto... v) {
          ((h ^= std::hash<int64_t>()(static_cast<int64_t>(v)) +
                 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)),
           ...);
        },
        k.fields());
    return h;
  }
};

/// The workspace cuBLASLt's algorithms may use: 32 MiB, what NVIDIA
/// recommends for Hopper (4 MiB suffices before it). Taken once from the
/// device's caching allocator, so it counts against the device's limit.
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;

} // namespace whale::rt::cuda

#endif
