// RUN: whale-opt %s -split-input-file --whale-widen-bf16=fused-casts=true -whale-fuse-elementwise | FileCheck %s
// RUN: whale-opt %s -split-input-file --whale-widen-bf16 | FileCheck %s --check-prefix=ALONE

// When fusion follows, a value read only inside fused kernels stays bf16
// in memory: the casts join the kernels, which widen it as they load it
// and round it as they store it. An MLP's hidden layer: the product is
// stored in bf16, and the bias, GELU and the rounding for the next
// product run as one kernel that reads and writes bf16. (The sum between
// the bias and the GELU, which amp's storage rounds, is not rounded: a
// value rounded only to be widened again stays fp32.)
// CHECK-LABEL: func.func @mlp(
// CHECK: %[[M:.*]] = whale.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
// CHECK: %[[H:.*]] = whale.fused(%[[M]], %{{.*}}) : (tensor<4x16xbf16>, tensor<16xbf16>) -> (tensor<4x16xbf16>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x16xbf16>, %[[B:.*]]: tensor<16xbf16>):
// CHECK-NEXT: %[[AW:.*]] = whale.cast %[[A]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK-NEXT: %[[BW:.*]] = whale.cast %[[B]] : tensor<16xbf16> to tensor<16xf32>
// CHECK-NEXT: %[[S:.*]] = whale.add %[[AW]], %[[BW]]
// CHECK-NEXT: %[[G:.*]] = whale.gelu %[[S]]
// CHECK-NEXT: %[[GB:.*]] = whale.cast %[[G]] : tensor<4x16xf32> to tensor<4x16xbf16>
// CHECK-NEXT: whale.fused_yield %[[GB]] : tensor<4x16xbf16>
// CHECK: whale.matmul %[[H]], %{{.*}} : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
// Without fusion to follow, the product is stored in fp32: no kernel
// would take its widening.
// ALONE-LABEL: func.func @mlp(
// ALONE: whale.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xf32>
// ALONE-NOT: tensor<4x16xf32> to tensor<4x16xbf16>
// ALONE: whale.gelu
// ALONE-NEXT: whale.cast %{{.*}} : tensor<4x16xf32> to tensor<4x16xbf16>
func.func @mlp(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>, %v: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %m = whale.matmul %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %s = whale.add %m, %b : tensor<4x16xbf16>, tensor<16xbf16> -> tensor<4x16xbf16>
  %g = whale.gelu %s : tensor<4x16xbf16>
  %o = whale.matmul %g, %v : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  return %o : tensor<4x8xbf16>
}

// -----

// A product that an op outside every kernel reads (here the causal mask)
// is stored in fp32 still: its widening would be a kernel of its own.
// CHECK-LABEL: func.func @read_outside_kernels(
// CHECK: whale.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xf32>
// CHECK-NEXT: whale.causal_mask %{{.*}} : tensor<4x4xf32>
func.func @read_outside_kernels(%x: tensor<4x8xbf16>, %w: tensor<8x4xbf16>) -> tensor<4x4xf32> {
  %m = whale.matmul %x, %w : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xbf16>
  %c = whale.causal_mask %m : tensor<4x4xbf16>
  %f = whale.cast %c : tensor<4x4xbf16> to tensor<4x4xf32>
  return %f : tensor<4x4xf32>
}

// -----

// A sum of a bf16 value (a bias's gradient) loads it as bf16 and adds in
// fp32; the gradient flowing on is stored in bf16, rounded in the kernel
// that makes it.
// CHECK-LABEL: func.func @bias_gradient(
// CHECK: whale.fused(%{{.*}}, %{{.*}}) : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>)
// CHECK: %[[P:.*]] = whale.mul
// CHECK-NEXT: %[[PB:.*]] = whale.cast %[[P]] : tensor<4x16xf32> to tensor<4x16xbf16>
// CHECK-NEXT: %[[PW:.*]] = whale.cast %[[PB]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK-NEXT: whale.reduce_sum %[[PW]] axes = [0] : tensor<4x16xf32> -> tensor<16xf32>
func.func @bias_gradient(%d: tensor<4x16xbf16>, %y: tensor<4x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>) {
  %g = whale.mul %d, %y : tensor<4x16xbf16>, tensor<4x16xbf16> -> tensor<4x16xbf16>
  %w = whale.cast %g : tensor<4x16xbf16> to tensor<4x16xf32>
  %s = whale.reduce_sum %w axes = [0] : tensor<4x16xf32> -> tensor<16xf32>
  return %g, %s : tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// A layernorm's scale and shift stay the region's own inputs: their
// widenings are not taken in (the row kernels read them apart from the
// chain), while the residual's are.
// CHECK-LABEL: func.func @layernorm_scale_in_bf16(
// CHECK: %[[G:.*]] = whale.cast %{{.*}} : tensor<16xbf16> to tensor<16xf32>
// CHECK: whale.fused(%{{.*}}, %{{.*}}, %[[G]], %{{.*}}) : (tensor<4x16xbf16>, tensor<4x16xbf16>, tensor<16xf32>, tensor<16xf32>)
// CHECK: whale.layernorm
func.func @layernorm_scale_in_bf16(%x: tensor<4x16xbf16>, %r: tensor<4x16xbf16>, %g: tensor<16xbf16>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %xw = whale.cast %x : tensor<4x16xbf16> to tensor<4x16xf32>
  %rw = whale.cast %r : tensor<4x16xbf16> to tensor<4x16xf32>
  %gw = whale.cast %g : tensor<16xbf16> to tensor<16xf32>
  %s = whale.add %xw, %rw : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %n = whale.layernorm %s, %gw, %b eps = 1.0e-5 : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<4x16xf32>
}
