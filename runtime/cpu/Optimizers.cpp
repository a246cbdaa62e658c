//===- Optimizers.cpp - SGD, Adam, AdamW, gradient clipping ---------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/VectorClones.h"

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

namespace {

/// Adam's constants in the element type, as the update has always rounded
/// them (1 - beta computed in double first).
template <class T> struct AdamConstants {
  T beta1, beta2, oneMinusBeta1, oneMinusBeta2, c1, c2, lr, eps, weightDecay;
};

/// Adam's update of elements [i0, i1), the decay coupled (Adam) or not
/// (AdamW). Restrict pointers and the branch taken out of the loop let it
/// vectorize; each element's arithmetic is the same as one at a time.
template <class T, bool Decoupled>
WHALE_INLINE_LOOP void adamRange(T *__restrict param, const T *__restrict grad,
                                 T *__restrict m, T *__restrict v, int64_t i0,
                                 int64_t i1, const AdamConstants<T> k) {
  for (int64_t i = i0; i < i1; ++i) {
    T p = param[i];
    T g = Decoupled ? grad[i] : grad[i] + k.weightDecay * p;
    T mi = k.beta1 * m[i] + k.oneMinusBeta1 * g;
    T vi = k.beta2 * v[i] + k.oneMinusBeta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    T update = (mi / k.c1) / (std::sqrt(vi / k.c2) + k.eps);
    if (Decoupled)
      update += k.weightDecay * p;
    param[i] = p - k.lr * update;
  }
}

template <class T>
WHALE_INLINE_LOOP void adamRangeWith(bool decoupled, T *param, const T *grad,
                                     T *m, T *v, int64_t i0, int64_t i1,
                                     const AdamConstants<T> &k) {
  if (decoupled)
    adamRange<T, true>(param, grad, m, v, i0, i1, k);
  else
    adamRange<T, false>(param, grad, m, v, i0, i1, k);
}

WHALE_VECTOR_CLONES void adamRangeOf(bool decoupled, float *param,
                                     const float *grad, float *m, float *v,
                                     int64_t i0, int64_t i1,
                                     const AdamConstants<float> &k) {
  adamRangeWith(decoupled, param, grad, m, v, i0, i1, k);
}

void adamRangeOf(bool decoupled, double *param, const double *grad, double *m,
                 double *v, int64_t i0, int64_t i1,
                 const AdamConstants<double> &k) {
  adamRangeWith(decoupled, param, grad, m, v, i0, i1, k);
}

} // namespace

template <class T>
void adamStep(CpuDevice &dev, View<T> param, View<const T> grad, T *m, T *v,
              int64_t step, double lr, double beta1, double beta2, double eps,
              double weightDecay, bool decoupled) {
  double c1 = 1 - std::pow(beta1, static_cast<double>(step));
  double c2 = 1 - std::pow(beta2, static_cast<double>(step));
  const AdamConstants<T> k{T(beta1),     T(beta2), T(1 - beta1),
                           T(1 - beta2), T(c1),    T(c2),
                           T(lr),        T(eps),   T(weightDecay)};
  dev.pool().parallelFor(param.numel(), 4096, [&](int64_t i0, int64_t i1) {
    adamRangeOf(decoupled, param.data, grad.data, m, v, i0, i1, k);
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
