//===- RopeFrequencies.h - the frequencies rope turns by ----*- C++ -*-===//
//
// Rotary position embedding's inverse frequencies, as Hugging Face
// transformers computes them for Llama, in f32 (every device computes them
// the same way, so they turn alike):
//   inv_freq[i] = 1 / theta^(2i / E)
// and, with Llama 3.1's scaling (rope_type "llama3"), each frequency by its
// wavelength 2 pi / inv_freq: divided by `factor` where the wavelength is
// longer than original / low_freq_factor, kept where it is shorter than
// original / high_freq_factor, blended between.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_ROPEFREQUENCIES_H
#define WHALE_RUNTIME_OPS_ROPEFREQUENCIES_H

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define WHALE_ROPE_HD __host__ __device__ inline
#else
#define WHALE_ROPE_HD inline
#endif

namespace whale::rt {

/// Llama 3.1's rescaling of the frequencies (transformers' rope_scaling).
struct RopeScaling {
  double factor = 1;
  double lowFreqFactor = 1;
  double highFreqFactor = 4;
  double originalPositions = 8192; ///< original_max_position_embeddings
};

/// inv_freq[i] of a row of `width` (i < width / 2).
WHALE_ROPE_HD float ropeInvFreq(int64_t i, int64_t width, float theta,
                                const RopeScaling *scaling) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(width);
  const float inv = 1.0f / powf(theta, exponent);
  if (!scaling)
    return inv;
  const float factor = static_cast<float>(scaling->factor);
  const float low = static_cast<float>(scaling->lowFreqFactor);
  const float high = static_cast<float>(scaling->highFreqFactor);
  const float original = static_cast<float>(scaling->originalPositions);
  const float lowWavelen = original / low, highWavelen = original / high;
  const float wavelen = 6.28318530717958647692f / inv;
  const float llama = wavelen > lowWavelen ? inv / factor : inv;
  if (wavelen < highWavelen || wavelen > lowWavelen)
    return llama;
  const float smooth =
      (original / wavelen - low) /
      static_cast<float>(scaling->highFreqFactor - scaling->lowFreqFactor);
  return (1 - smooth) * llama / factor + smooth * llama;
}

} // namespace whale::rt

#endif // WHALE_RUNTIME_OPS_ROPEFREQUENCIES_H
