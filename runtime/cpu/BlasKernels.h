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

#include <string>

namespace whale::rt::cpu {

/// The widest vectors a CPU or a set of kernels uses, in order.
enum class VectorLevel { Unknown, Sse, Avx, Avx2, Avx512 };

/// What a set of OpenBLAS's kernels (its core name, any case) uses:
/// Unknown for a name it does not list.
VectorLevel kernelLevel(const std::string &core);
/// This CPU's: AVX-512 counts where F, BW, DQ, VL and CD all are, AVX2
/// with FMA.
VectorLevel cpuLevel();
/// The kernels to use instead of `detected` on a CPU of `cpu`, or "" to
/// keep them: only a fallback below AVX2 on a CPU with AVX2 or more is
/// replaced (SkylakeX for AVX-512, Haswell for AVX2), so that kernels
/// OpenBLAS chose for a CPU it knows are never second-guessed.
std::string betterKernels(const std::string &detected, VectorLevel cpu);

struct BlasKernels {
  std::string detected; ///< what OpenBLAS chose when it loaded
  std::string running;  ///< what runs the GEMMs now
  /// Why they differ, or how they were named; "" when OpenBLAS chose alone.
  std::string note;
};

/// Chooses once (thread-safe; before the first GEMM) and says what runs.
const BlasKernels &blasKernels();

} // namespace whale::rt::cpu

#endif
