// RUN: whale-opt %s -split-input-file --whale-amp-storage | FileCheck %s
// RUN: whale-opt %s -split-input-file --whale-amp-storage --whale-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: whale-opt %s -split-input-file --whale-amp-storage --whale-autodiff --whale-widen-bf16 | FileCheck %s --check-prefix=WIDE
// RUN: whale-opt %s -split-input-file --whale-amp-storage --whale-autodiff --whale-widen-bf16 --whale-to-runtime | FileCheck %s --check-prefix=LOWER

// Activations in bf16: the input and each parameter are converted once
// before their first reader in the block (w is read twice, converted
// once), every op between computes in bf16, the loss in fp32 (its
// logits converted back), and the taskgraph yields what it declares.
// CHECK-LABEL: func.func @mlp(
// CHECK: whale.taskgraph replicate -> (tensor<f32>)
// CHECK: %[[W:.*]] = whale.param "w" {{.*}} : tensor<8x8xf32>
// CHECK: %[[G:.*]] = whale.param "g" {{.*}} : tensor<8xf32>
// CHECK: %[[XB:.*]] = whale.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[WB:.*]] = whale.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK: %[[H:.*]] = whale.matmul %[[XB]], %[[WB]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[GB:.*]] = whale.cast %[[G]] : tensor<8xf32> to tensor<8xbf16>
// CHECK: %[[N:.*]] = whale.layernorm %[[H]], %[[GB]], %[[GB]] {{.*}} : tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
// CHECK: %[[A:.*]] = whale.gelu %[[N]] : tensor<4x8xbf16>
// CHECK-NOT: whale.cast %[[W]]
// CHECK: %[[Y:.*]] = whale.matmul %[[A]], %[[WB]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[HALF:.*]] = whale.constant 5.000000e-01 : tensor<f32>
// CHECK: %[[HB:.*]] = whale.cast %[[HALF]] : tensor<f32> to tensor<bf16>
// CHECK: %[[S:.*]] = whale.mul %[[Y]], %[[HB]] : tensor<4x8xbf16>, tensor<bf16> -> tensor<4x8xbf16>
// CHECK: %[[SF:.*]] = whale.cast %[[S]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[CE:.*]] = whale.cross_entropy %[[SF]], %{{.*}} : tensor<4x8xf32>, tensor<4xi32> -> tensor<4xf32>
// CHECK: %[[L:.*]] = whale.reduce_mean %[[CE]] axes = [0] : tensor<4xf32> -> tensor<f32>
// CHECK: whale.yield %[[L]] : tensor<f32>

// The gradient of each cast is the cast back: the parameters' gradients
// are fp32, as the function returns them.
// GRAD-LABEL: func.func @mlp_grad(
// GRAD-SAME: -> (tensor<f32>, tensor<8x8xf32>, tensor<8xf32>)
// GRAD-DAG: whale.cast %{{.*}} : tensor<8x8xbf16> to tensor<8x8xf32>
// GRAD-DAG: whale.cast %{{.*}} : tensor<8xbf16> to tensor<8xf32>
// GRAD-DAG: whale.matmul_grad {{.*}} -> tensor<8x8xbf16>
// Until an op has a bf16 kernel it computes in fp32 between casts: its
// bf16 operands widened once per block, its result rounded back. A value
// rounded only for readers that widen it again stays fp32 (between
// layernorm and gelu, g for layernorm), and a bf16 matmul whose every
// reader widens its result stores it in fp32: each of w's two gradients
// is an fp32 GEMM result, added in fp32 and returned as it is. The loss
// reads the logits as they are stored, in bf16 (the scaling before it
// computes in fp32 and rounds).
// WIDE-LABEL: func.func @mlp(
// WIDE: %[[W:.*]] = whale.param "w"
// WIDE: %[[G:.*]] = whale.param "g"
// WIDE: %[[XB:.*]] = whale.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// WIDE: %[[WB:.*]] = whale.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// WIDE: %[[H:.*]] = whale.matmul %[[XB]], %[[WB]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xf32>
// WIDE-NEXT: %[[N:.*]] = whale.layernorm %[[H]], %[[G]], %[[G]] {{.*}} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
// WIDE-NEXT: %[[A:.*]] = whale.gelu %[[N]] : tensor<4x8xf32>
// WIDE-NEXT: %[[AB:.*]] = whale.cast %[[A]] : tensor<4x8xf32> to tensor<4x8xbf16>
// WIDE-NEXT: %[[Y:.*]] = whale.matmul %[[AB]], %[[WB]] : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xf32>
// WIDE-NEXT: %[[HALF:.*]] = whale.constant 5.000000e-01 : tensor<f32>
// WIDE-NEXT: %[[S:.*]] = whale.mul %[[Y]], %[[HALF]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// WIDE-NEXT: %[[SB:.*]] = whale.cast %[[S]] : tensor<4x8xf32> to tensor<4x8xbf16>
// WIDE-NEXT: whale.cross_entropy %[[SB]], %{{.*}} : tensor<4x8xbf16>, tensor<4xi32> -> tensor<4xf32>
// WIDE-LABEL: func.func @mlp_grad(
// WIDE: %[[DW1:.*]] = whale.matmul_grad {{.*}} operand = 1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xf32>
// WIDE: %[[DW2:.*]] = whale.matmul_grad {{.*}} operand = 1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xf32>
// WIDE-NEXT: %[[DW:.*]] = whale.add %[[DW1]], %[[DW2]] : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
// WIDE-NEXT: return %{{.*}}, %[[DW]], %{{.*}} : tensor<f32>, tensor<8x8xf32>, tensor<8xf32>
// LOWER-LABEL: llvm.func @mlp(
// LOWER: llvm.call @whale_rt_cast
// LOWER: llvm.call @whale_rt_matmul
// LOWER-LABEL: llvm.func @mlp_grad(
// LOWER: llvm.call @whale_rt_matmul_grad
// LOWER: llvm.call @whale_rt_cast
func.func @mlp(%x: tensor<4x8xf32>, %t: tensor<4xi32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 0.02] : tensor<8x8xf32>
    %g = whale.param "g" ones [] : tensor<8xf32>
    %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n = whale.layernorm %h, %g, %g eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %a = whale.gelu %n : tensor<4x8xf32>
    %y = whale.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %half = whale.constant 0.5 : tensor<f32>
    %s = whale.mul %y, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %c = whale.cross_entropy %s, %t : tensor<4x8xf32>, tensor<4xi32> -> tensor<4xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Two taskgraphs hand each other fp32 (what the first declares), and the
// second converts it again for its bf16 readers. A function that is not a
// model is left alone.
// CHECK-LABEL: func.func @stages(
// CHECK: %[[T0:.*]] = whale.taskgraph replicate -> (tensor<2x4xf32>)
// CHECK: %[[R:.*]] = whale.relu %{{.*}} : tensor<2x4xbf16>
// CHECK: %[[RF:.*]] = whale.cast %[[R]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK: whale.yield %[[RF]] : tensor<2x4xf32>
// CHECK: whale.taskgraph replicate -> (tensor<f32>)
// CHECK: whale.cast %[[T0]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK: whale.tanh %{{.*}} : tensor<2x4xbf16>
// CHECK-LABEL: func.func @helper(
// CHECK: whale.relu %{{.*}} : tensor<2xf32>
func.func @stages(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model} {
  %a = whale.taskgraph replicate -> (tensor<2x4xf32>) {
    %r = whale.relu %x : tensor<2x4xf32>
    whale.yield %r : tensor<2x4xf32>
  }
  %b = whale.taskgraph replicate -> (tensor<f32>) {
    %t = whale.tanh %a : tensor<2x4xf32>
    %s = whale.reduce_sum %t axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %s : tensor<f32>
  }
  return %b : tensor<f32>
}
func.func @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = whale.relu %x : tensor<2xf32>
  return %r : tensor<2xf32>
}
