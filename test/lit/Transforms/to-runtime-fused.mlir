// RUN: whale-opt %s -split-input-file --whale-to-runtime | FileCheck %s

// A fused region is one call of whale_rt_fused with its kernel's address,
// its inputs and results, and the launch: 32 rows of 16 (the batch's two
// dimensions read alike by both inputs, merged). The kernel is a
// linalg.generic in the nested kernel module; the bias, read along the
// rows by a constant index, is not sliced. Two regions that compute the
// same at the same types share one kernel.

// CHECK-LABEL: llvm.func @m(
// CHECK: %[[K:.*]] = llvm.mlir.addressof @__whale_fused_0 : !llvm.ptr
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: llvm.call @whale_rt_fused(%{{.*}}, %{{.*}}, %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[COLS]])
// CHECK: llvm.mlir.addressof @__whale_fused_0 : !llvm.ptr
// CHECK: llvm.call @whale_rt_fused
// CHECK-NOT: __whale_fused_1
// CHECK: module @whale_kernels {
// CHECK: func.func @__whale_fused_0.body(%[[X:.*]]: memref<32x16xf32>, %[[B:.*]]: memref<1x16xf32>, %[[O:.*]]: memref<32x16xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK: %[[XS:.*]] = memref.subview %[[X]][%[[LO]], 0] [%[[N]], 16] [1, 1]
// CHECK: %[[OS:.*]] = memref.subview %[[O]][%[[LO]], 0] [%[[N]], 16] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[XS]], %[[B]] : {{.*}}) outs(%[[OS]] : {{.*}})
// CHECK: arith.addf
// CHECK: math.exp
// CHECK: linalg.yield
func.func @m(%x: tensor<2x16x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>) attributes {whale.model} {
  %r = whale.fused(%x, %b) : (tensor<2x16x16xf32>, tensor<16xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x16xf32>, %c: tensor<16xf32>):
    %s = whale.add %a, %c : tensor<2x16x16xf32>, tensor<16xf32> -> tensor<2x16x16xf32>
    %g = whale.gelu %s : tensor<2x16x16xf32>
    whale.fused_yield %g : tensor<2x16x16xf32>
  }
  %r2 = whale.fused(%r, %b) : (tensor<2x16x16xf32>, tensor<16xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x16xf32>, %c: tensor<16xf32>):
    %s = whale.add %a, %c : tensor<2x16x16xf32>, tensor<16xf32> -> tensor<2x16x16xf32>
    %g = whale.gelu %s : tensor<2x16x16xf32>
    whale.fused_yield %g : tensor<2x16x16xf32>
  }
  return %r, %r2 : tensor<2x16x16xf32>, tensor<2x16x16xf32>
}
