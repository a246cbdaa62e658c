//===- VectorLevel.h - how wide Whale's CPU kernels' vectors are -*- C++ -*-===//
//
// Three kernel paths depend on the CPU's vector width: OpenBLAS's GEMM
// kernels (Haswell's AVX2 ones or SkylakeX's AVX-512 ones sum a product's
// terms in different orders, so their results differ in the last bits),
// the fused element kernels the JIT and `whale compile --emit=bundle`
// build for the host, and the runtime's loops built three times
// (runtime/cpu/VectorClones.h, which give the same bits at every width).
// WHALE_CPU_LEVEL caps all of them at a level below the CPU's, so that one
// machine with AVX-512 runs the suite through the AVX2 path too, as a CPU
// without AVX-512 runs it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_VECTORLEVEL_H
#define WHALE_SUPPORT_VECTORLEVEL_H

#include <string>

namespace whale {

/// The widest vectors a CPU or a set of kernels uses, in order.
enum class VectorLevel { Unknown, Sse, Avx, Avx2, Avx512 };

/// This CPU's: AVX-512 counts where F, BW, DQ, VL and CD all are (LLVM's
/// x86-64-v4), AVX2 with FMA, BMI1/2, F16C, MOVBE and LZCNT (x86-64-v3).
VectorLevel hardwareVectorLevel();

/// What WHALE_CPU_LEVEL names: Unknown where it is unset. `error` says why
/// a value it has is not a level ("" otherwise).
VectorLevel requestedVectorLevel(std::string &error);

/// The level Whale's kernels run at: the CPU's, or the lower one that
/// WHALE_CPU_LEVEL names (a higher one than the CPU has, or a value that
/// is not a level, leaves the CPU's; checkVectorLevelSetting reports it).
VectorLevel kernelVectorLevel();

/// "" where WHALE_CPU_LEVEL is unset or names a level this CPU runs; else
/// what is wrong with it, for a command to refuse before any work.
std::string checkVectorLevelSetting();

/// LLVM's CPU name for code built at `level`: "x86-64-v4", "x86-64-v3",
/// "x86-64-v2" (AVX without AVX2 is built as x86-64-v2), "x86-64".
const char *llvmCpuForLevel(VectorLevel level);

/// The level of one of LLVM's x86-64 level names, Unknown for others.
VectorLevel levelOfLlvmCpu(const std::string &cpu);

} // namespace whale

#endif
