// RUN: whale-opt %s -split-input-file -whale-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: whale-opt %s -split-input-file -whale-fuse-elementwise | FileCheck %s --check-prefix=FUSE
// RUN: whale-opt %s -split-input-file -whale-to-runtime | FileCheck %s --check-prefix=RT

// silu's gradient is a whale.formula_grad naming it; fusion takes both
// into regions with their neighbours; the lowering computes one the
// fusion left alone in a region of its own (a kernel, no runtime call of
// its own).
// GRAD-LABEL: func.func @m_grad
// GRAD: %[[X:.*]] = whale.add
// GRAD: %[[Y:.*]] = whale.silu %[[X]] : tensor<4x8xf32>
// GRAD: whale.formula_grad "whale.silu" %[[X]], %[[Y]], %{{.*}} : tensor<4x8xf32>

// FUSE-LABEL: func.func @m
// FUSE: whale.fused(%arg0, %{{.*}})
// FUSE-NEXT: ^bb0
// FUSE-NEXT: whale.add
// FUSE-NEXT: whale.silu
// FUSE-NEXT: whale.mul
// FUSE-NEXT: whale.reduce_mean
// FUSE-NEXT: whale.fused_yield

// RT-LABEL: llvm.func @m(
// RT: llvm.call @whale_rt_binary
// RT: llvm.call @whale_rt_fused
// RT: llvm.call @whale_rt_binary
// RT-NOT: whale_rt_unary
// RT: module @whale_kernels
// RT: math.exp
// RT: arith.divf
func.func @m(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.model} {
  %b = whale.param "m/b" normal [0.0, 0.5] : tensor<8xf32>
  %s = whale.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = whale.silu %s : tensor<4x8xf32>
  %p = whale.mul %y, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = whale.reduce_mean %p axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
