// RUN: whale-opt %s | whale-opt | FileCheck %s
// RUN: whale-opt %s --mlir-print-op-generic | whale-opt | FileCheck %s

// CHECK-LABEL: func.func @replicated
// CHECK: %[[H:.*]] = whale.taskgraph replicate(4) -> (tensor<8x16xf32>) {
// CHECK:   %[[W:.*]] = whale.param "m/w" normal [0.000000e+00, 2.000000e-02] : tensor<16x16xf32>
// CHECK:   %[[Y:.*]] = whale.matmul %{{.*}}, %[[W]]
// CHECK:   whale.yield %[[Y]] : tensor<8x16xf32>
// CHECK: return %[[H]]
func.func @replicated(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = whale.taskgraph replicate(4) -> (tensor<8x16xf32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<16x16xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    whale.yield %y : tensor<8x16xf32>
  }
  return %h : tensor<8x16xf32>
}

// A split TaskGraph on every device (no count), with two results.
// CHECK-LABEL: func.func @split_all
// CHECK: whale.taskgraph split -> (tensor<8x32xf32>, tensor<32xf32>) {
func.func @split_all(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %a, %b = whale.taskgraph split -> (tensor<8x32xf32>, tensor<32xf32>) {
    %w = whale.param "m/head/w" xavier [1.0] : tensor<16x32xf32>
    %bias = whale.param "m/head/b" zeros [] : tensor<32xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %y, %bias : tensor<8x32xf32>, tensor<32xf32>
  }
  return %a : tensor<8x32xf32>
}

// CHECK-LABEL: func.func @no_results
// CHECK: whale.taskgraph replicate(2) {
// CHECK-NEXT: whale.param "m/unused" ones []
// CHECK-NEXT: whale.yield
func.func @no_results() {
  whale.taskgraph replicate(2) {
    %p = whale.param "m/unused" ones [] : tensor<4xf32>
    whale.yield
  }
  return
}

// Every initializer.
// CHECK-LABEL: func.func @initializers
// CHECK: whale.param "p/zeros" zeros []
// CHECK: whale.param "p/ones" ones []
// CHECK: whale.param "p/normal" normal [1.000000e+00, 5.000000e-01]
// CHECK: whale.param "p/uniform" uniform [-1.000000e-01, 1.000000e-01]
// CHECK: whale.param "p/xavier" xavier [2.000000e+00]
// CHECK: whale.param "p/bf16" zeros [] : tensor<4xbf16>
func.func @initializers() {
  %0 = whale.param "p/zeros" zeros [] : tensor<4xf32>
  %1 = whale.param "p/ones" ones [] : tensor<4xf32>
  %2 = whale.param "p/normal" normal [1.0, 0.5] : tensor<4x4xf32>
  %3 = whale.param "p/uniform" uniform [-0.1, 0.1] : tensor<4x4xf32>
  %4 = whale.param "p/xavier" xavier [2.0] : tensor<4x4xf32>
  %5 = whale.param "p/bf16" zeros [] : tensor<4xbf16>
  return
}
