//===- VectorClones.h - loops built for the CPU's vectors -------*- C++ -*-===//
//
// The runtime is built for baseline x86-64 (SSE2), so that one build runs
// on every x86-64 machine. A loop marked WHALE_VECTOR_CLONES is compiled
// three times, for SSE2, AVX2 and AVX-512, and the loader picks the widest
// the CPU has (GCC's target_clones, resolved once through an ifunc).
//
// Only self-contained leaf loops take it (no calls that are not inlined),
// and their files are built with -ffp-contract=off: the clones then differ
// in vector width only, never in rounding (no fused multiply-adds), so a
// run gives the same bits on every x86-64 CPU, as it did before.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CPU_VECTORCLONES_H
#define WHALE_RUNTIME_CPU_VECTORCLONES_H

// Not under a sanitizer: the loader runs the clones' resolver before the
// sanitizer's runtime is set up, and an instrumented resolver crashes there
// (ThreadSanitizer at start-up; AddressSanitizer likewise).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WHALE_VECTOR_CLONES                                                    \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WHALE_VECTOR_CLONES
#endif

/// Inlined into each clone, so that the clone's vectors reach its loops.
#define WHALE_INLINE_LOOP inline __attribute__((always_inline))

#endif
