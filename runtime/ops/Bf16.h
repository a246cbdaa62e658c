//===- Bf16.h - rounding fp32 to bfloat16 ------------------------*- C++
//-*-===//
//
// bf16 keeps fp32's exponent and the top 7 bits of its mantissa. Rounding is
// to nearest, ties to even, as the GPU's __float2bfloat16_rn, so a CPU run
// under amp = "bf16" rounds each matmul input exactly as a GPU run does.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_BF16_H
#define WHALE_RUNTIME_OPS_BF16_H

#include <cstdint>
#include <cstring>

// Host and device: the element programs' kernels round with it too
// (runtime/ops/ElementProgram.h).
#if defined(__CUDACC__)
#define WHALE_BF16_HD __host__ __device__ inline
#else
#define WHALE_BF16_HD inline
#endif

namespace whale::rt {

/// The bf16 value nearest f, as an fp32 (its low 16 bits zero).
WHALE_BF16_HD float roundToBf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) {
    // Infinity stays; a NaN keeps a mantissa bit in the top 7, so it stays
    // a NaN after truncation.
    if (u & 0x007fffffu)
      u |= 0x00400000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
  }
  u &= 0xffff0000u;
  memcpy(&f, &u, sizeof f);
  return f;
}

/// The bits of the bf16 value nearest f, as bf16 storage holds them.
inline uint16_t bf16Bits(float f) {
  float r = roundToBf16(f);
  uint32_t u;
  std::memcpy(&u, &r, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

/// The fp32 value of bf16 bits: exact, every bf16 is an fp32.
inline float bf16Value(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

} // namespace whale::rt

#endif
