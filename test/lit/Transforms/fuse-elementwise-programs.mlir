// RUN: whale-opt %s -split-input-file -whale-fuse-elementwise="element-programs=true" | FileCheck %s

// For GPUs, regions are those an element program runs. A chain and the
// bias gradient that ends it fuse as they do for the CPU.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: whale.fused(%arg0, %arg2, %arg1)
// CHECK: whale.unary_grad gelu
// CHECK: whale.binary_grad add
// CHECK: whale.fused_yield
func.func @bias_gradient(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %y = whale.gelu %x : tensor<8x16xf32>
  %d = whale.unary_grad gelu %x, %y, %dy : tensor<8x16xf32>
  %s = whale.binary_grad add %x, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %d, %s : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// An op of each row joins as it does for the CPU: a block of threads
// runs each row.
// CHECK-LABEL: func.func @residual_layernorm
// CHECK: whale.fused(%arg0, %arg1, %arg2, %arg3)
// CHECK: whale.add
// CHECK: whale.gelu
// CHECK: whale.layernorm
// CHECK: whale.fused_yield
func.func @residual_layernorm(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = whale.add %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a = whale.gelu %s : tensor<4x8xf32>
  %y = whale.layernorm %a, %g, %b eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Under amp's storage the rounding of the layernorm's rows joins the
// region: the program keeps the f32 row apart and stores the rows rounded,
// so no f32 copy of them is stored and converted after.
// CHECK-LABEL: func.func @rounded_layernorm
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0, %arg1, %arg2, %arg3) : {{.*}} -> (tensor<4x8xf32>, tensor<4x8xbf16>)
// CHECK: %[[S:.*]] = whale.add
// CHECK: %[[N:.*]] = whale.layernorm %[[S]]
// CHECK: %[[H:.*]] = whale.cast %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: whale.fused_yield %[[S]], %[[H]]
// CHECK-NOT: whale.cast
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @rounded_layernorm(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %s = whale.add %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %r = whale.cast %y : tensor<4x8xf32> to tensor<4x8xbf16>
  return %s, %r : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// A rounding joins only as the row op's only reader: where the f32 rows
// are read too, they are stored, and the rounding stays the runtime's.
// CHECK-LABEL: func.func @rows_read_beside_their_rounding
// CHECK: %[[R:.*]] = whale.fused
// CHECK: whale.softmax
// CHECK: whale.fused_yield
// CHECK: whale.cast %[[R]] : tensor<4x8xf32> to tensor<4x8xbf16>
func.func @rows_read_beside_their_rounding(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %e = whale.exp %x : tensor<4x8xf32>
  %p = whale.softmax %e axis = -1 : tensor<4x8xf32>
  %r = whale.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
  return %p, %r : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// Nor in rows wider than the 8192 elements a kernel keeps apart.
// CHECK-LABEL: func.func @rounding_too_wide
// CHECK: %[[R:.*]] = whale.fused
// CHECK: whale.softmax
// CHECK: whale.fused_yield
// CHECK: whale.cast %[[R]] : tensor<2x8200xf32> to tensor<2x8200xbf16>
func.func @rounding_too_wide(%x: tensor<2x8200xf32>) -> tensor<2x8200xbf16> {
  %e = whale.exp %x : tensor<2x8200xf32>
  %p = whale.softmax %e axis = -1 : tensor<2x8200xf32>
  %r = whale.cast %p : tensor<2x8200xf32> to tensor<2x8200xbf16>
  return %r : tensor<2x8200xbf16>
}

// -----

// Nothing reads a rounded row inside the region: an op after the rounding
// starts a chain of its own.
// CHECK-LABEL: func.func @rounded_rows_end_the_chain
// CHECK: %[[R:.*]] = whale.fused
// CHECK: whale.softmax
// CHECK: whale.cast
// CHECK: whale.fused_yield
// CHECK: whale.fused(%[[R]])
// CHECK: whale.neg
func.func @rounded_rows_end_the_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = whale.exp %x : tensor<4x8xf32>
  %p = whale.softmax %e axis = -1 : tensor<4x8xf32>
  %r = whale.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
  %w = whale.cast %r : tensor<4x8xbf16> to tensor<4x8xf32>
  %n = whale.neg %w : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Two sums over different dimensions: a thread owns one element of every
// sum of its region, so the second stays out (and, alone, the runtime's).
// CHECK-LABEL: func.func @sums_over_different_dimensions
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0)
// CHECK: whale.reduce_sum %{{.*}} axes = [0]
// CHECK: whale.fused_yield
// CHECK-NOT: whale.fused
// CHECK: whale.reduce_sum %[[R]]#0 axes = [1]
func.func @sums_over_different_dimensions(%x: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  %q = whale.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %c = whale.reduce_sum %q axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %r = whale.reduce_sum %q axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %c, %r : tensor<8xf32>, tensor<4xf32>
}

// -----

// A chain with more operands than a GPU thread holds (16, its inputs and
// results together) is cut into regions that fit: 15 inputs and the
// result, then the rest.
// CHECK-LABEL: func.func @many_operands
// CHECK: whale.fused(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13, %arg14)
// CHECK: whale.fused(%{{.*}}, %arg15, %arg16)
// CHECK-NOT: whale.fused(
func.func @many_operands(%a0: tensor<64xf32>, %a1: tensor<64xf32>, %a2: tensor<64xf32>, %a3: tensor<64xf32>, %a4: tensor<64xf32>, %a5: tensor<64xf32>, %a6: tensor<64xf32>, %a7: tensor<64xf32>, %a8: tensor<64xf32>, %a9: tensor<64xf32>, %a10: tensor<64xf32>, %a11: tensor<64xf32>, %a12: tensor<64xf32>, %a13: tensor<64xf32>, %a14: tensor<64xf32>, %a15: tensor<64xf32>, %a16: tensor<64xf32>) -> tensor<64xf32> {
  %s1 = whale.add %a0, %a1 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s2 = whale.add %s1, %a2 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s3 = whale.add %s2, %a3 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s4 = whale.add %s3, %a4 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s5 = whale.add %s4, %a5 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s6 = whale.add %s5, %a6 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s7 = whale.add %s6, %a7 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s8 = whale.add %s7, %a8 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s9 = whale.add %s8, %a9 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s10 = whale.add %s9, %a10 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s11 = whale.add %s10, %a11 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s12 = whale.add %s11, %a12 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s13 = whale.add %s12, %a13 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s14 = whale.add %s13, %a14 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s15 = whale.add %s14, %a15 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s16 = whale.add %s15, %a16 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  return %s16 : tensor<64xf32>
}
