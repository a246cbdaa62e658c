// RUN: whale-opt %s -split-input-file --whale-autodiff | FileCheck %s

// @m_grad returns the loss and each parameter's gradient, names in
// whale.gradients; the model itself is left as it was.
// CHECK-LABEL: func.func @m(
// CHECK: whale.taskgraph replicate
// CHECK-LABEL: func.func @m_grad(%{{.*}}: tensor<4x3xf32>) -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>)
// CHECK-SAME: whale.gradients = ["m/w", "m/unused"]
// CHECK-NOT: whale.taskgraph
// CHECK: %[[X:.*]] = whale.matmul %[[IN:.*]], %[[W:.*]] :
// CHECK: %[[L:.*]] = whale.reduce_mean
// CHECK: %[[ONE:.*]] = whale.constant 1.000000e+00 : tensor<f32>
// CHECK: %[[DX:.*]] = whale.reduce_grad mean %[[X]], %[[ONE]] axes = [0, 1]
// Only the parameter's gradient is built, not the input's.
// CHECK-NOT: operand = 0
// CHECK: %[[DW:.*]] = whale.matmul_grad %[[IN]], %[[W]], %[[DX]] operand = 1
// A parameter the loss does not use gets zeros.
// CHECK: %[[Z:.*]] = whale.constant 0.000000e+00 : tensor<2xf32>
// CHECK: return %[[L]], %[[DW]], %[[Z]]
func.func @m(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<3x2xf32>
    %u = whale.param "m/unused" zeros [] : tensor<2xf32>
    %y = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of both uses' gradients.
// CHECK-LABEL: func.func @twice_grad
// CHECK: %[[A:.*]] = whale.binary_grad mul %[[P:.*]], %[[P]], %{{.*}} operand = 0
// CHECK: %[[B:.*]] = whale.binary_grad mul %[[P]], %[[P]], %{{.*}} operand = 1
// CHECK: %[[S:.*]] = whale.add %[[A]], %[[B]] : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
// CHECK: return %{{.*}}, %[[S]]
func.func @twice() -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" normal [0.0, 1.0] : tensor<2xf32>
  %sq = whale.mul %p, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %s = whale.reduce_sum %sq axes = [0] : tensor<2xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Every op of a transformer block has its gradient: a gradient function
// lowers to the runtime, each result stored into the result array.
// RUN: whale-opt %s -split-input-file --whale-autodiff --whale-to-runtime | FileCheck %s --check-prefix=LOWER
// LOWER-LABEL: llvm.func @lm_grad
// LOWER: llvm.call @whale_rt_embedding_grad
// LOWER: %[[R1:.*]] = llvm.getelementptr %{{.*}}[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// LOWER: llvm.store %{{.*}}, %[[R1]]
func.func @lm(%ids: tensor<2x4xi32>) -> tensor<f32> attributes {whale.model} {
  %t = whale.param "lm/table" normal [0.0, 0.1] : tensor<8x4xf32>
  %e = whale.embedding %t[%ids] : tensor<8x4xf32>, tensor<2x4xi32> -> tensor<2x4x4xf32>
  %s = whale.softmax %e axis = -1 : tensor<2x4x4xf32>
  %c = whale.cross_entropy %s, %ids : tensor<2x4x4xf32>, tensor<2x4xi32> -> tensor<2x4xf32>
  %l = whale.reduce_mean %c axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A negative axis counts from the last dimension in the gradients too:
// the slice's gradient scatters along dimension 1, and the concatenation's
// splits the gradient at column 3.
// CHECK-LABEL: func.func @last_axis_grad
// CHECK: whale.slice %{{.*}} axis = 1, start = 0, end = 3 : tensor<2x5xf32> -> tensor<2x3xf32>
// CHECK: %[[S:.*]] = whale.slice %{{.*}} axis = 1, start = 3, end = 5 : tensor<2x5xf32> -> tensor<2x2xf32>
// CHECK: whale.slice_grad %[[S]] axis = 1, start = 1 : tensor<2x2xf32> -> tensor<2x4xf32>
func.func @last_axis() -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" normal [0.0, 1.0] : tensor<2x4xf32>
  %q = whale.param "q" normal [0.0, 1.0] : tensor<2x3xf32>
  %s = whale.slice %p axis = -1, start = 1, end = 3 : tensor<2x4xf32> -> tensor<2x2xf32>
  %c = whale.concat %q, %s axis = -1 : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x5xf32>
  %r = whale.reduce_sum %c axes = [0, 1] : tensor<2x5xf32> -> tensor<f32>
  return %r : tensor<f32>
}
