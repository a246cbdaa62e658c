//===- BlasKernels.h - which of OpenBLAS's kernels run ----------*- C++ -*-===//
//
// OpenBLAS built for many CPUs at once (Debian's DYNAMIC_ARCH build) picks
// its kernels when it loads, by the CPU's model number. A CPU newer than
// the library is a model it does not know, and it falls back to its oldest
// x86-64 kernels (Prescott: SSE3): on a Xeon with AVX-512 that OpenBLAS
// 0.3.21 does not know, an fp32 GEMM ran at 38 GFLOP/s on two threads where
// the AVX-512 kernels run at 320. Where OpenBLAS fell back so and the user
// named no kernels (OPENBLAS_CORETYPE), Whale picks them by what the CPU
// can do instead, once, before its first GEMM.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CPU_BLASKERNELS_H
#define WHALE_RUNTIME_CPU_BLASKERNELS_H

#include "support/VectorLevel.h"

#include <string>

namespace whale::rt::cpu {

using whale::VectorLevel;

/// What a set of OpenBLAS's kernels (its core name, any case) uses:
/// Unknown for a name it does not list.
VectorLevel kernelLevel(const std::string &core);
/// The kernels to use instead of `detected` where kernels may use vectors
/// up to `level` (the CPU's, or lower under WHALE_CPU_LEVEL), or "" to keep
/// them: a fallback below AVX2 where AVX2 or more may run is replaced, and
/// so are kernels wider than `level` (SkylakeX for AVX-512, Haswell for
/// AVX2, Sandybridge for AVX, Prescott for SSE); kernels OpenBLAS chose for
/// a CPU it knows, within `level`, are never second-guessed.
std::string betterKernels(const std::string &detected, VectorLevel level);

struct BlasKernels {
  std::string detected; ///< what OpenBLAS chose when it loaded
  std::string running;  ///< what runs the GEMMs now
  /// Why they differ, or how they were named; "" when OpenBLAS chose alone.
  std::string note;
};

/// Chooses once (thread-safe; before the first GEMM) and says what runs:
/// kernels no wider than kernelVectorLevel(), even where the user named
/// wider ones through OPENBLAS_CORETYPE.
const BlasKernels &blasKernels();

} // namespace whale::rt::cpu

#endif
