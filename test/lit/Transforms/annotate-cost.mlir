// RUN: whale-opt %s -split-input-file --whale-annotate-cost | FileCheck %s

// A matmul is 2*M*N*K FLOPs, reads both operands, writes its result.
// CHECK-LABEL: func.func @matmul
// CHECK: whale.matmul {{.*}} {whale.cost = {bytes_read = 768 : i64, bytes_written = 128 : i64, flops = 1024 : i64, memory = 128 : i64}}
func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Transposes do not change the count; batch dimensions multiply it:
// 2 * (2 * 4 * 4) * 8.
// CHECK-LABEL: func.func @batched
// CHECK: whale.matmul {{.*}}bytes_read = 512 : i64, bytes_written = 128 : i64, flops = 512 : i64
func.func @batched(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x4x4xf32> {
  %0 = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

// Elementwise ops: 1 FLOP per output element (with broadcasting), 4 for
// transcendental functions, 8 for gelu.
// CHECK-LABEL: func.func @elementwise
// CHECK: whale.add {{.*}}{whale.cost = {bytes_read = 144 : i64, bytes_written = 128 : i64, flops = 32 : i64, memory = 128 : i64}}
// CHECK: whale.exp {{.*}}flops = 128 : i64
// CHECK: whale.gelu {{.*}}flops = 256 : i64
// CHECK: whale.relu {{.*}}flops = 32 : i64
func.func @elementwise(%x: tensor<8x4xf32>, %b: tensor<8x4xf32>, %v: tensor<4xf32>) {
  %0 = whale.add %x, %v : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %1 = whale.exp %x : tensor<8x4xf32>
  %2 = whale.gelu %x : tensor<8x4xf32>
  %3 = whale.relu %x : tensor<8x4xf32>
  return
}

// -----

// Softmax 5, layernorm 8, cross entropy 5 per logit; a mean adds one
// division to its sum.
// CHECK-LABEL: func.func @losses
// CHECK: whale.softmax {{.*}}flops = 160 : i64
// CHECK: whale.layernorm {{.*}}flops = 256 : i64
// CHECK: whale.cross_entropy {{.*}}bytes_read = 160 : i64, bytes_written = 32 : i64, flops = 160 : i64
// CHECK: whale.reduce_mean {{.*}}flops = 9 : i64
func.func @losses(%x: tensor<8x4xf32>, %g: tensor<4xf32>, %y: tensor<8xi32>) {
  %0 = whale.softmax %x axis = -1 : tensor<8x4xf32>
  %1 = whale.layernorm %x, %g, %g eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  %2 = whale.cross_entropy %x, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<8xf32>
  %3 = whale.reduce_mean %2 axes = [0] : tensor<8xf32> -> tensor<f32>
  return
}
