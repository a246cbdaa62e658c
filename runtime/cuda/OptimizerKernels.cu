//===- OptimizerKernels.cu - optimizer updates and gradient norms ---------===//
//
// SGD and Adam over one parameter, the gradients' sum of squares and
// their scaling (clipping), and the same over many tensors in one launch
// (MultiTensorPlan.h). Each element's arithmetic is ElementMath.h's, so
// one launch for many tensors computes exactly what a launch per tensor
// does. The sum of squares runs a fixed number of blocks in a fixed
// order, in double, so every run and every plan adds the same numbers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/GridLaunch.cuh"
#include "runtime/cuda/MultiTensorPlan.h"

namespace whale::rt::cuda {

namespace {

__global__ void sgdKernel(float *p, const float *g, float *velocity, int64_t n,
                          SgdScalars byValue, const SgdScalars *live) {
  const SgdScalars a = live ? *live : byValue;
  WHALE_GRID_LOOP(i, n) {
    sgdAt(p, g, velocity, i, a.lr, a.momentum, a.weightDecay);
  }
}

__device__ void adamWith(float *p, const float *g, float *m, float *v,
                         int64_t i, const AdamScalars &a) {
  adamAt(p, g, m, v, i, a.lr, a.beta1, a.beta2, a.eps, a.weightDecay,
         a.decoupled, a.c1, a.c2);
}

__global__ void adamKernel(float *p, const float *g, float *m, float *v,
                           int64_t n, AdamScalars byValue,
                           const AdamScalars *live) {
  const AdamScalars a = live ? *live : byValue;
  WHALE_GRID_LOOP(i, n) { adamWith(p, g, m, v, i, a); }
}

/// A multi-tensor launch's tensors, passed by value.
struct AdamTable {
  float *p[kMultiTensors];
  const float *g[kMultiTensors];
  float *m[kMultiTensors], *v[kMultiTensors];
  int64_t n[kMultiTensors];
  int32_t start[kMultiTensors + 1];
  int count;
};

__global__ void adamMultiKernel(AdamTable t, AdamScalars byValue,
                                const AdamScalars *live) {
  const AdamScalars a = live ? *live : byValue;
  int k = multiTensorOf(t.start, t.count, blockIdx.x);
  MultiTensorWalk walk(blockIdx.x - t.start[k], t.start[k + 1] - t.start[k],
                       threadIdx.x, blockDim.x);
  for (int64_t i = walk.first; i < t.n[k]; i += walk.step)
    adamWith(t.p[k], t.g[k], t.m[k], t.v[k], i, a);
}

/// Adds this thread's share `s` of a sum of squares to block's partial:
/// a tree over the block's threads, the same for every tensor and launch.
__device__ void addBlockSum(double s, double *share, double *partial) {
  share[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      share[threadIdx.x] += share[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *partial += share[0];
  __syncthreads(); // share is reused by the next tensor
}

/// Tensors whose squares one launch sums.
struct SquaresTable {
  const float *x[kMultiTensors];
  int64_t n[kMultiTensors];
  int count;
};

/// Each tensor in turn over the same kSquareBlocks blocks, each thread's
/// share in grid-loop order, then the block's tree: the same sums for a
/// tensor whatever else a launch holds.
__global__ void sumSquaresMultiKernel(SquaresTable t, double *partials) {
  __shared__ double share[kRowThreads];
  for (int k = 0; k < t.count; ++k) {
    const float *x = t.x[k];
    double s = 0;
    WHALE_GRID_LOOP(i, t.n[k]) { s += double(x[i]) * double(x[i]); }
    addBlockSum(s, share, &partials[blockIdx.x]);
  }
}

__device__ double sumOfPartials(const double *partials) {
  double s = 0;
  for (int b = 0; b < kSquareBlocks; ++b)
    s += partials[b];
  return s;
}

__global__ void sumPartialsKernel(const double *partials, double *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    *out = sumOfPartials(partials);
}

__global__ void clipFactorKernel(const double *partials, double maxNorm,
                                 double *norm, float *factor) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    double n = sqrt(sumOfPartials(partials));
    *norm = n;
    *factor = n > maxNorm && n > 0 ? float(maxNorm / n) : 1.0f;
  }
}

__global__ void scaleKernel(float *x, int64_t n, float factor) {
  WHALE_GRID_LOOP(i, n) { x[i] *= factor; }
}

/// Tensors one launch scales.
struct ScaleTable {
  float *x[kMultiTensors];
  int64_t n[kMultiTensors];
  int32_t start[kMultiTensors + 1];
  int count;
};

__global__ void scaleMultiKernel(ScaleTable t, const float *factor) {
  float f = *factor;
  if (f == 1.0f)
    return;
  int k = multiTensorOf(t.start, t.count, blockIdx.x);
  MultiTensorWalk walk(blockIdx.x - t.start[k], t.start[k + 1] - t.start[k],
                       threadIdx.x, blockDim.x);
  for (int64_t i = walk.first; i < t.n[k]; i += walk.step)
    t.x[k][i] *= f;
}

/// Each launch of `launches` with its table filled by `fill(table, k, i)`
/// (entry k from the caller's tensor i) and run by `run(table, blocks)`.
template <class Table, class Fill, class Run>
void eachLaunch(const std::vector<MultiTensorLaunch> &launches, Fill fill,
                Run run) {
  for (const MultiTensorLaunch &l : launches) {
    Table t{};
    t.count = l.count;
    for (int k = 0; k < l.count; ++k) {
      fill(t, k, l.index[k]);
      t.start[k] = l.start[k];
    }
    t.start[l.count] = l.start[l.count];
    run(t, l.blocks());
  }
}

} // namespace

void sgdStep(cudaStream_t s, float *p, const float *g, float *velocity,
             int64_t n, const SgdScalars &a, const SgdScalars *live) {
  sgdKernel<<<blocksFor(n), kThreads, 0, s>>>(p, g, velocity, n, a, live);
}

void adamStep(cudaStream_t s, float *p, const float *g, float *m, float *v,
              int64_t n, const AdamScalars &a, const AdamScalars *live) {
  adamKernel<<<blocksFor(n), kThreads, 0, s>>>(p, g, m, v, n, a, live);
}

void adamSteps(cudaStream_t s, const std::vector<AdamTensor> &tensors,
               const AdamScalars &a, const AdamScalars *live) {
  std::vector<int64_t> sizes;
  for (const AdamTensor &t : tensors)
    sizes.push_back(t.n);
  eachLaunch<AdamTable>(
      planMultiTensor(sizes),
      [&](AdamTable &t, int k, int i) {
        const AdamTensor &x = tensors[i];
        t.p[k] = x.p, t.g[k] = x.g, t.m[k] = x.m, t.v[k] = x.v, t.n[k] = x.n;
      },
      [&](const AdamTable &t, int32_t blocks) {
        adamMultiKernel<<<blocks, kThreads, 0, s>>>(t, a, live);
      });
}

void sumSquaresPartials(
    cudaStream_t s, const std::vector<std::pair<const float *, int64_t>> &xs,
    double *partials) {
  SquaresTable t{};
  auto flush = [&] {
    if (t.count > 0)
      sumSquaresMultiKernel<<<kSquareBlocks, kRowThreads, 0, s>>>(t, partials);
    t.count = 0;
  };
  for (const auto &[x, n] : xs) {
    if (n <= 0)
      continue;
    t.x[t.count] = x, t.n[t.count] = n;
    if (++t.count == kMultiTensors)
      flush();
  }
  flush();
}

void sumPartials(cudaStream_t s, const double *partials, double *out) {
  sumPartialsKernel<<<1, 1, 0, s>>>(partials, out);
}

void clipFactor(cudaStream_t s, const double *partials, double maxNorm,
                double *norm, float *factor) {
  clipFactorKernel<<<1, 1, 0, s>>>(partials, maxNorm, norm, factor);
}

void scale(cudaStream_t s, float *x, int64_t n, float factor) {
  scaleKernel<<<blocksFor(n), kThreads, 0, s>>>(x, n, factor);
}

void scaleBy(cudaStream_t s, const std::vector<std::pair<float *, int64_t>> &xs,
             const float *factor) {
  std::vector<int64_t> sizes;
  for (const auto &x : xs)
    sizes.push_back(x.second);
  eachLaunch<ScaleTable>(
      planMultiTensor(sizes),
      [&](ScaleTable &t, int k, int i) {
        t.x[k] = xs[i].first, t.n[k] = xs[i].second;
      },
      [&](const ScaleTable &t, int32_t blocks) {
        scaleMultiKernel<<<blocks, kThreads, 0, s>>>(t, factor);
      });
}

} // namespace whale::rt::cuda
