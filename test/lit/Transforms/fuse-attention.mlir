// RUN: whale-opt %s --split-input-file --whale-fuse-attention | FileCheck %s

// The causal chain of nn.attention becomes one op; the scale constant goes
// with it.
// CHECK-LABEL: func.func @causal
// CHECK-NEXT: %[[O:.*]] = whale.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %c = whale.constant 2.500000e-01 : tensor<f32>
  %m = whale.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %x = whale.causal_mask %m : tensor<2x4x16x16xf32>
  %p = whale.softmax %x axis = -1 : tensor<2x4x16x16xf32>
  %o = whale.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// No mask, the scale as a divisor on the left-free side: full attention
// with scale 1/4; keys may outnumber queries.
// CHECK-LABEL: func.func @full
// CHECK-NEXT: whale.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 : tensor<3x5x8xf32>, tensor<3x9x8xf32>
func.func @full(%q: tensor<3x5x8xf32>, %k: tensor<3x9x8xf32>, %v: tensor<3x9x8xf32>) -> tensor<3x5x8xf32> {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<3x5x8xf32>, tensor<3x9x8xf32> -> tensor<3x5x9xf32>
  %c = whale.constant 4.000000e+00 : tensor<f32>
  %m = whale.div %s, %c : tensor<3x5x9xf32>, tensor<f32> -> tensor<3x5x9xf32>
  %p = whale.softmax %m axis = 2 : tensor<3x5x9xf32>
  %o = whale.matmul %p, %v : tensor<3x5x9xf32>, tensor<3x9x8xf32> -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}

// -----

// Not fused: the probabilities are read elsewhere too (they must exist),
// the softmax runs over another axis, the scores are not q k^T.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: whale.attention
// CHECK: return
func.func @kept(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %p = whale.softmax %s axis = 1 : tensor<4x4xf32>
  %o = whale.matmul %p, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s2 = whale.matmul %q, %k {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %p2 = whale.softmax %s2 axis = 0 : tensor<4x4xf32>
  %o2 = whale.matmul %p2, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %kt = whale.transpose %k permutation = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %s3 = whale.matmul %q, %kt : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %p3 = whale.softmax %s3 axis = 1 : tensor<4x4xf32>
  %o3 = whale.matmul %p3, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %o, %p, %o2, %o3 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
