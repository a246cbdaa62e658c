//===- Rope.cpp - rotary position embedding -------------------------------===//
//
// Llama's rotary position embedding, with Hugging Face transformers'
// conventions (the meaning Whale follows): each row of E of position t
// pairs element i with element i + E/2 (rotate_half) and turns the pair by
// t * inv_freq[i] (runtime/ops/RopeFrequencies.h: 1 / theta^(2i / E), and
// Llama 3.1's rescaling of them where asked). transformers computes
// inv_freq, the angles and their cos and sin in f32; so does the table
// here (the cos and sin of the f32 angle, each rounded once), so a
// checkpoint's logits match transformers' to f32's rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <cmath>
#include <vector>

namespace whale::rt::cpu {

void ropeTable(int64_t first, int64_t positions, int64_t width, double theta,
               const RopeScaling *scaling, float *cos, float *sin) {
  const int64_t half = width / 2;
  std::vector<float> invFreq(half);
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] = ropeInvFreq(i, width, static_cast<float>(theta), scaling);
  for (int64_t t = 0; t < positions; ++t)
    for (int64_t i = 0; i < half; ++i) {
      float angle = static_cast<float>(first + t) * invFreq[i];
      cos[t * half + i] = static_cast<float>(std::cos(double(angle)));
      sin[t * half + i] = static_cast<float>(std::sin(double(angle)));
    }
}

template <class T>
void rope(CpuDevice &dev, View<const T> x, int64_t first, double theta,
          const RopeScaling *scaling, bool inverse, View<T> y) {
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t width = x.shape[rank - 1], positions = x.shape[rank - 2];
  const int64_t half = width / 2;
  const int64_t rows = width ? x.numel() / width : 0;
  std::vector<float> cos(positions * half), sin(positions * half);
  ropeTable(first, positions, width, theta, scaling, cos.data(), sin.data());
  const T sign = inverse ? T(-1) : T(1);
  dev.pool().parallelFor(
      rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, width)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T *in = x.data + r * width;
          T *out = y.data + r * width;
          const float *c = cos.data() + (r % positions) * half;
          const float *s = sin.data() + (r % positions) * half;
          for (int64_t i = 0; i < half; ++i) {
            const T a = in[i], b = in[i + half];
            const T ci = c[i], si = sign * T(s[i]);
            out[i] = a * ci - b * si;
            out[i + half] = b * ci + a * si;
          }
        }
      });
}

template void rope<float>(CpuDevice &, View<const float>, int64_t, double,
                          const RopeScaling *, bool, View<float>);
template void rope<double>(CpuDevice &, View<const double>, int64_t, double,
                           const RopeScaling *, bool, View<double>);

} // namespace whale::rt::cpu
