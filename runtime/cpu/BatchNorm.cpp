//===- BatchNorm.cpp - batch normalization's passes on the CPU -----------===//
//
// x [N, C, S...] is N x C planes of S contiguous floats, plane (n, c) at
// (n C + c) S. Sums run per channel (a thread a channel, in doubles, in
// row order, so a sum does not depend on the thread count); the
// elementwise passes per plane.
//
// A channel's sum runs in kLanes doubles, element i of each plane into
// lane i mod kLanes, the lanes added in order at the end: one double
// accumulator waits on each add before the next (four cycles an element),
// and so did the whole batch norm of a ResNet-50 step (32 ms of it at
// 64 x 64, batch 8); independent lanes the compiler keeps in vectors.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

namespace whale::rt {

namespace {
struct ChannelPlanes {
  int64_t rows = 0, channels = 0, size = 0;
};
ChannelPlanes channelPlanesOf(const Shape &shape) {
  ChannelPlanes p;
  p.rows = shape[0];
  p.channels = shape[1];
  p.size = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    p.size *= shape[i];
  return p;
}
/// Threads take whole channels: about 64 KiB of a channel's planes each.
int64_t channelGrain(const ChannelPlanes &p) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.rows * p.size));
}
int64_t planeGrain(const ChannelPlanes &p) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.size));
}
constexpr int kLanes = 8;

/// Adds f(i) for i in [0, n) into `lanes` (element i into lane i mod
/// kLanes).
template <class F> inline void addLanes(double *lanes, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += f(i + l);
  for (int l = 0; i < n; ++i, ++l)
    lanes[l] += f(i);
}

inline double laneTotal(const double *lanes) {
  double total = 0;
  for (int l = 0; l < kLanes; ++l)
    total += lanes[l];
  return total;
}
} // namespace

Status CpuDevice::channelSums(View<const float> x, const float *center,
                              float *sums) {
  ChannelPlanes p = channelPlanesOf(x.shape);
  pool().parallelFor(p.channels, channelGrain(p), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double lanes[kLanes] = {};
      const double m = center ? center[c] : 0.0;
      for (int64_t n = 0; n < p.rows; ++n) {
        const float *plane = x.data + (n * p.channels + c) * p.size;
        if (center)
          addLanes(lanes, p.size, [&](int64_t i) {
            double d = plane[i] - m;
            return d * d;
          });
        else
          addLanes(lanes, p.size, [&](int64_t i) { return double(plane[i]); });
      }
      sums[c] = static_cast<float>(laneTotal(lanes));
    }
  });
  return Status::ok();
}

Status CpuDevice::channelAffine(View<const float> x, const float *center,
                                const float *scale, const float *shift,
                                View<float> y) {
  ChannelPlanes p = channelPlanesOf(x.shape);
  pool().parallelFor(p.rows * p.channels, planeGrain(p),
                     [&](int64_t q0, int64_t q1) {
                       for (int64_t q = q0; q < q1; ++q) {
                         int64_t c = q % p.channels;
                         const float m = center[c], k = scale[c],
                                     s = shift[c];
                         const float *in = x.data + q * p.size;
                         float *out = y.data + q * p.size;
                         for (int64_t i = 0; i < p.size; ++i)
                           out[i] = (in[i] - m) * k + s;
                       }
                     });
  return Status::ok();
}

Status CpuDevice::channelGradSums(View<const float> x, View<const float> dy,
                                  const float *center, const float *invstd,
                                  float *sums) {
  ChannelPlanes p = channelPlanesOf(x.shape);
  pool().parallelFor(p.channels, channelGrain(p), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double dyLanes[kLanes] = {}, dyXhatLanes[kLanes] = {};
      const double m = center[c];
      for (int64_t n = 0; n < p.rows; ++n) {
        const float *g = dy.data + (n * p.channels + c) * p.size;
        const float *in = x.data + (n * p.channels + c) * p.size;
        addLanes(dyLanes, p.size, [&](int64_t i) { return double(g[i]); });
        addLanes(dyXhatLanes, p.size,
                 [&](int64_t i) { return double(g[i]) * (in[i] - m); });
      }
      sums[c] = static_cast<float>(laneTotal(dyLanes));
      sums[p.channels + c] =
          static_cast<float>(laneTotal(dyXhatLanes) * invstd[c]);
    }
  });
  return Status::ok();
}

Status CpuDevice::channelGradInput(View<const float> x, View<const float> dy,
                                   const float *center, const float *a,
                                   const float *b, const float *d,
                                   View<float> dx) {
  ChannelPlanes p = channelPlanesOf(x.shape);
  pool().parallelFor(p.rows * p.channels, planeGrain(p),
                     [&](int64_t q0, int64_t q1) {
                       for (int64_t q = q0; q < q1; ++q) {
                         int64_t c = q % p.channels;
                         const float m = center[c], ka = a[c], kb = b[c],
                                     kd = d[c];
                         int64_t at = q * p.size;
                         for (int64_t i = 0; i < p.size; ++i)
                           dx.data[at + i] = ka * dy.data[at + i] +
                                             kb * (x.data[at + i] - m) + kd;
                       }
                     });
  return Status::ok();
}

} // namespace whale::rt
