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

// -----

// GPT's heads: q, k and v split by a swap of T and H, the output merged by
// the swap back. The permutes fold into a sequence-major attention over
// the unpermuted [B, T, H, E] operands; no transpose is left.
// CHECK-LABEL: func.func @heads
// CHECK-NOT: whale.transpose
// CHECK: %[[O:.*]] = whale.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 causal sequence_major : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
// CHECK-NOT: whale.transpose
// CHECK: return %[[O]] : tensor<2x16x4x8xf32>
func.func @heads(%x: tensor<2x16x4x8xf32>, %y: tensor<2x16x4x8xf32>, %z: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  %q = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k = whale.transpose %y permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v = whale.transpose %z permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %c = whale.constant 2.500000e-01 : tensor<f32>
  %m = whale.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %x2 = whale.causal_mask %m : tensor<2x4x16x16xf32>
  %p = whale.softmax %x2 axis = -1 : tensor<2x4x16x16xf32>
  %o = whale.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %r = whale.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %r : tensor<2x16x4x8xf32>
}

// -----

// Three heads' layouts; the batch's leading axes may be more than one.
// Keys may outnumber queries.
// CHECK-LABEL: func.func @heads_full
// CHECK-NEXT: %[[O:.*]] = whale.attention %arg0, %arg1, %arg2 scale = 1.000000e+00 sequence_major : tensor<2x3x5x2x8xf32>, tensor<2x3x9x2x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @heads_full(%x: tensor<2x3x5x2x8xf32>, %y: tensor<2x3x9x2x8xf32>, %z: tensor<2x3x9x2x8xf32>) -> tensor<2x3x5x2x8xf32> {
  %q = whale.transpose %x permutation = [0, 1, 3, 2, 4] : tensor<2x3x5x2x8xf32> -> tensor<2x3x2x5x8xf32>
  %k = whale.transpose %y permutation = [0, 1, 3, 2, 4] : tensor<2x3x9x2x8xf32> -> tensor<2x3x2x9x8xf32>
  %v = whale.transpose %z permutation = [0, 1, 3, 2, 4] : tensor<2x3x9x2x8xf32> -> tensor<2x3x2x9x8xf32>
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x3x2x5x8xf32>, tensor<2x3x2x9x8xf32> -> tensor<2x3x2x5x9xf32>
  %p = whale.softmax %s axis = -1 : tensor<2x3x2x5x9xf32>
  %o = whale.matmul %p, %v : tensor<2x3x2x5x9xf32>, tensor<2x3x2x9x8xf32> -> tensor<2x3x2x5x8xf32>
  %r = whale.transpose %o permutation = [0, 1, 3, 2, 4] : tensor<2x3x2x5x8xf32> -> tensor<2x3x5x2x8xf32>
  return %r : tensor<2x3x5x2x8xf32>
}

// -----

// Not folded: the head-major output is read besides the merge (it must
// exist); one operand is not a swap of T and H (the batch and the heads
// swapped instead); a split is read twice (k and v one projection).
// CHECK-LABEL: func.func @heads_kept
// CHECK-NOT: sequence_major
// CHECK: return
func.func @heads_kept(%x: tensor<2x16x4x8xf32>, %w: tensor<4x2x16x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) {
  %q = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o = whale.attention %q, %k, %v scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r = whale.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  %q2 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k2 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v2 = whale.transpose %w permutation = [1, 0, 2, 3] : tensor<4x2x16x8xf32> -> tensor<2x4x16x8xf32>
  %o2 = whale.attention %q2, %k2, %v2 scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r2 = whale.transpose %o2 permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  %q3 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %kv = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o3 = whale.attention %q3, %kv, %kv scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r3 = whale.transpose %o3 permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %r, %o, %r2, %r3 : tensor<2x16x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
}
