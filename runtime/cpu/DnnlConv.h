//===- DnnlConv.h - the CPU's convolutions through oneDNN ---------*- C++
//-*-===//
//
// Convolutions forward and backward (data and weights) through oneDNN, the
// library PyTorch's CPU convolutions use (issue 91): its direct kernels on
// blocked layouts (nChw16c on AVX-512, nChw8c on AVX2) instead of im2col,
// a GEMM and col2im, each a full pass over memory. Whale's tensors stay
// NCHW and OIHW: the primitive's layouts are chosen by oneDNN ("any") and
// reordered at the call's edges, as PyTorch's eager path does. Primitives
// are made once per shape and kept (one cache a device: a device belongs
// to one rank thread).
//
// Threads: the device's own. A call's batch is cut into one run of samples
// a thread, each run's convolution computed by oneDNN held to that thread
// (its OpenMP team of one), the weight gradient's parts added in order. So
// the work stays on the device's pinned threads and under its share
// (cpu:N@share=S), and no OpenMP team spins between calls beside them (a
// team of two spinning took a ResNet-50 step on 2 cores from 12.2 to 8.7
// images/s, where the same kernels without its spinning gave 17.4).
//
// Built where CMake finds oneDNN (WHALE_HAVE_DNNL); WHALE_CPU_CONV=im2col
// in the environment keeps the composed path (runtime/ops/ComposedConv.cpp)
// for a process, as a build without oneDNN runs.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CPU_DNNLCONV_H
#define WHALE_RUNTIME_CPU_DNNLCONV_H

#include "runtime/core/Device.h"

#include <memory>
#include <string>

namespace whale::rt {

class ThreadPool;

class DnnlConv {
public:
  /// `pool`: the device's threads, which do the work.
  explicit DnnlConv(ThreadPool &pool);
  ~DnnlConv();

  /// Whether this process runs convolutions through oneDNN (built with it,
  /// and WHALE_CPU_CONV is not "im2col").
  static bool enabled();
  /// What `whale devices` says of the CPU's convolutions: "oneDNN 2.6.3
  /// (avx512_core)" or why the composed path runs.
  static std::string describe();

  Status forward(View<const float> x, View<const float> w, const Window2d &win,
                 int64_t groups, View<float> y);
  Status backward(View<const float> x, View<const float> w,
                  View<const float> dy, const Window2d &win, int64_t groups,
                  View<float> *dx, View<float> *dw);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace whale::rt

#endif
