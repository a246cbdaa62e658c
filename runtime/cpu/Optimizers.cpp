//===- Optimizers.cpp - SGD, Adam, AdamW, gradient clipping ---------------===//

#include "runtime/cpu/Kernels.h"

#include <cmath>

namespace whale::rt::cpu {

template <class T>
void sgdStep(CpuDevice &dev, View<T> param, View<const T> grad, T *velocity,
             double lr, double momentum, double weightDecay) {
  dev.pool().parallelFor(param.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T g = grad.data[i] + T(weightDecay) * param.data[i];
      if (velocity) {
        velocity[i] = T(momentum) * velocity[i] + g;
        g = velocity[i];
      }
      param.data[i] -= T(lr) * g;
    }
  });
}

template <class T>
void adamStep(CpuDevice &dev, View<T> param, View<const T> grad, T *m, T *v,
              int64_t step, double lr, double beta1, double beta2, double eps,
              double weightDecay, bool decoupled) {
  double c1 = 1 - std::pow(beta1, static_cast<double>(step));
  double c2 = 1 - std::pow(beta2, static_cast<double>(step));
  dev.pool().parallelFor(param.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      T p = param.data[i];
      T g = grad.data[i] + (decoupled ? T(0) : T(weightDecay) * p);
      m[i] = T(beta1) * m[i] + T(1 - beta1) * g;
      v[i] = T(beta2) * v[i] + T(1 - beta2) * g * g;
      T mhat = m[i] / T(c1), vhat = v[i] / T(c2);
      T update = mhat / (std::sqrt(vhat) + T(eps));
      if (decoupled)
        update += T(weightDecay) * p;
      param.data[i] = p - T(lr) * update;
    }
  });
}

template <class T> double sumSquares(const std::vector<View<T>> &views) {
  // Summed in a fixed order in double, so every plan computes the same norm.
  double sq = 0;
  for (const View<T> &g : views)
    for (int64_t i = 0, n = g.numel(); i < n; ++i)
      sq += static_cast<double>(g.data[i]) * static_cast<double>(g.data[i]);
  return sq;
}

template <class T>
void scaleAll(CpuDevice &dev, const std::vector<View<T>> &views, T factor) {
  for (const View<T> &g : views)
    dev.pool().parallelFor(g.numel(), 4096, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        g.data[i] *= factor;
    });
}

template <class T>
double clipGradNorm(CpuDevice &dev, std::vector<View<T>> &grads, double maxNorm,
                    const std::function<double(double)> &combineSquares) {
  double sq = sumSquares(grads);
  if (combineSquares)
    sq = combineSquares(sq);
  double norm = std::sqrt(sq);
  if (norm > maxNorm && norm > 0)
    scaleAll(dev, grads, T(maxNorm / norm));
  return norm;
}

#define WHALE_INSTANTIATE(T)                                                   \
  template void sgdStep<T>(CpuDevice &, View<T>, View<const T>, T *, double,   \
                           double, double);                                    \
  template void adamStep<T>(CpuDevice &, View<T>, View<const T>, T *, T *,     \
                            int64_t, double, double, double, double, double,   \
                            bool);                                             \
  template double sumSquares<T>(const std::vector<View<T>> &);                 \
  template void scaleAll<T>(CpuDevice &, const std::vector<View<T>> &, T);     \
  template double clipGradNorm<T>(CpuDevice &, std::vector<View<T>> &, double, \
                                  const std::function<double(double)> &);
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
#undef WHALE_INSTANTIATE

} // namespace whale::rt::cpu
