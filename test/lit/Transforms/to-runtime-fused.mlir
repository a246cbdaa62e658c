// RUN: whale-opt %s -split-input-file --whale-to-runtime | FileCheck %s

// A fused region is one call of whale_rt_fused with its kernel's address,
// its inputs and results, and the launch: 32 rows of 16 (the batch's two
// dimensions read alike by both inputs, merged). The kernel is a
// linalg.generic in the nested kernel module; the bias, read along the
// rows by a constant index, is not sliced. Two regions that compute the
// same at the same types share one kernel. Beside the kernel goes the
// region's element program, for GPUs: 115 words, whose header says an
// iteration space of 32 x 16, two inputs, one result, 4 registers and 19
// instructions (runtime/ops/ElementProgram.h; FusedKernelTest runs them).

// CHECK: llvm.mlir.global internal constant @[[PROGRAM:.*]](dense<"0x3347525045464857020000000000000020000000000000001000000000000000020000000000000001000000000000000400000000000000130000000000000
// CHECK-SAME: : tensor<115xi64>)
// CHECK-LABEL: llvm.func @m(
// CHECK: %[[K:.*]] = llvm.mlir.addressof @__whale_fused_0 : !llvm.ptr
// CHECK: %[[P:.*]] = llvm.mlir.addressof @[[PROGRAM]] : !llvm.ptr
// CHECK-NEXT: %[[WORDS:.*]] = llvm.mlir.constant(115 : i64) : i64
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK: llvm.call @whale_rt_fused(%{{.*}}, %{{.*}}, %[[K]], %[[P]], %[[WORDS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[COLS]])
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

// -----

// A region ending in a bias's gradient: the rows are summed (a reduction
// dimension), so the calls split the columns: 8 of 32 elements each.
// Every operand that has the columns is sliced to [lo, hi) of them, the
// sum's slice is zeroed before the loop adds into it, and the bias, which
// the gradient of a sum never loads, is sliced like the others.
// CHECK-LABEL: llvm.func @bias_gradient(
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK: %[[COLS:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK: llvm.call @whale_rt_fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[COLS]])
// CHECK: func.func @__whale_fused_0.body(%[[H:.*]]: memref<32x8xf32>, %[[B:.*]]: memref<1x8xf32>, %[[DY:.*]]: memref<32x8xf32>, %[[D:.*]]: memref<32x8xf32>, %[[S:.*]]: memref<8xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: %[[N:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK: memref.subview %[[H]][0, %[[LO]]] [32, %[[N]]] [1, 1]
// CHECK: memref.subview %[[B]][0, %[[LO]]] [1, %[[N]]] [1, 1]
// CHECK: memref.subview %[[DY]][0, %[[LO]]] [32, %[[N]]] [1, 1]
// CHECK: memref.subview %[[D]][0, %[[LO]]] [32, %[[N]]] [1, 1]
// CHECK: %[[SS:.*]] = memref.subview %[[S]][%[[LO]]] [%[[N]]] [1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[SS]] :
// CHECK: linalg.generic {{{.*}}iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.*}}, %[[SS]] :
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %[[ACC:.*]]: f32):
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[G:.*]] : f32
// CHECK: linalg.yield %[[G]], %[[SUM]] : f32, f32
func.func @bias_gradient(%h: tensor<2x16x8xf32>, %b: tensor<8xf32>, %dy: tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<8xf32>) attributes {whale.model} {
  %r:2 = whale.fused(%h, %b, %dy) : (tensor<2x16x8xf32>, tensor<8xf32>, tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<2x16x8xf32>, %c: tensor<8xf32>, %g: tensor<2x16x8xf32>):
    %y = whale.gelu %x : tensor<2x16x8xf32>
    %d = whale.unary_grad gelu %x, %y, %g : tensor<2x16x8xf32>
    %s = whale.binary_grad add %x, %c, %d operand = 1 : tensor<2x16x8xf32>, tensor<8xf32>, tensor<2x16x8xf32> -> tensor<8xf32>
    whale.fused_yield %d, %s : tensor<2x16x8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<2x16x8xf32>, tensor<8xf32>
}

// -----

// A mean of every element: nothing is left to split, one call of one
// "row" does it all, and the sum is divided by the 64 elements it added.
// CHECK-LABEL: llvm.func @mean_of_all(
// CHECK: %[[ALL:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-NEXT: llvm.call @whale_rt_fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ALL]])
// CHECK: func.func @__whale_fused_0.body(%[[X:.*]]: memref<64xf32>, %[[M:.*]]: memref<f32>, %{{.*}}: index, %{{.*}}: index)
// CHECK-NOT: memref.subview
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[M]] : memref<f32>)
// CHECK: linalg.generic {{{.*}}iterator_types = ["reduction"]} ins(%[[X]] : memref<64xf32>) outs(%[[M]] : memref<f32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{{.*}}iterator_types = []} outs(%[[M]] : memref<f32>)
// CHECK: arith.constant 6.400000e+01 : f32
// CHECK: arith.divf
func.func @mean_of_all(%x: tensor<8x8xf32>) -> tensor<f32> attributes {whale.model} {
  %m = whale.fused(%x) : (tensor<8x8xf32>) -> (tensor<f32>) {
  ^bb0(%a: tensor<8x8xf32>):
    %q = whale.mul %a, %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %s = whale.reduce_mean %q axes = [0, 1] : tensor<8x8xf32> -> tensor<f32>
    whale.fused_yield %s : tensor<f32>
  }
  return %m : tensor<f32>
}

// -----

// A residual sum ending in its layernorm runs row by row: 8 rows of 8,
// each row's sum written into the layernorm's output, then its mean, its
// variance about the mean and the normalized row (in place), while the
// row is in the cache. The statistic lives on the stack, allocated once.
// Its element program keeps the iteration shape [2, 4, 8] unmerged (the
// row op runs along the last dimension) and ends in the row op's words.
// CHECK-LABEL: llvm.func @residual_layernorm(
// CHECK: llvm.mlir.addressof @__whale_fused_0 : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof
// CHECK-NEXT: %[[P:.*]] = llvm.mlir.addressof @__whale_const_{{[0-9]+}} : !llvm.ptr
// CHECK-NEXT: %[[WORDS:.*]] = llvm.mlir.constant(42 : i64) : i64
// CHECK: %[[ROWS:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[COLS:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: llvm.call @whale_rt_fused(%{{.*}}, %{{.*}}, %{{.*}}, %[[P]], %[[WORDS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ROWS]], %[[COLS]])
// CHECK: func.func @__whale_fused_0.body(%[[X:.*]]: memref<8x8xf32>, %[[H:.*]]: memref<8x8xf32>, %[[G:.*]]: memref<1x8xf32>, %[[B:.*]]: memref<1x8xf32>, %[[Y:.*]]: memref<8x8xf32>, %[[LO:.*]]: index, %[[HI:.*]]: index)
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<f32>
// CHECK: scf.for %[[R:.*]] = %[[LO]] to %[[HI]]
// CHECK: %[[XR:.*]] = memref.subview %[[X]][%[[R]], 0] [1, 8] [1, 1]
// CHECK: %[[HR:.*]] = memref.subview %[[H]][%[[R]], 0] [1, 8] [1, 1]
// CHECK: %[[YR:.*]] = memref.subview %[[Y]][%[[R]], 0] [1, 8] [1, 1]
// CHECK: linalg.generic {{{.*}}} ins(%[[XR]], %[[HR]], %[[G]], %[[B]] : {{.*}}) outs(%[[YR]] :
// CHECK: arith.addf
// CHECK: linalg.generic {{{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[YR]] : {{.*}}) outs(%[[ACC]] : memref<f32>)
// CHECK: arith.divf
// CHECK: linalg.generic {{{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[YR]] : {{.*}}) outs(%[[ACC]] : memref<f32>)
// CHECK: math.sqrt
// CHECK: linalg.generic {{{.*}}} ins(%[[YR]], %[[G]], %[[B]] : {{.*}}) outs(%[[YR]] :
func.func @residual_layernorm(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> attributes {whale.model} {
  %n = whale.fused(%x, %h, %g, %b) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>) {
  ^bb0(%a: tensor<2x4x8xf32>, %c: tensor<2x4x8xf32>, %gg: tensor<8xf32>, %bb: tensor<8xf32>):
    %s = whale.add %a, %c : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %y = whale.layernorm %s, %gg, %bb eps = 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    whale.fused_yield %y : tensor<2x4x8xf32>
  }
  return %n : tensor<2x4x8xf32>
}
