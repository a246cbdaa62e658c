// RUN: whale-opt %s -split-input-file -whale-fuse-elementwise | FileCheck %s

// A bias add and its GELU: one region; the sum lives inside it only.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: %[[R:.*]] = whale.fused(%arg0, %arg1) : (tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[S:.*]] = whale.add %[[X]], %[[B]]
// CHECK-NEXT: %[[G:.*]] = whale.gelu %[[S]]
// CHECK-NEXT: whale.fused_yield %[[G]] : tensor<8x16xf32>
// CHECK: return %[[R]]
func.func @bias_gelu(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %s = whale.add %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %g = whale.gelu %s : tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

// A value read after the region too is one of its results; the region
// stands where its last op stood, before that reader. The sum reads the
// product, which reads the GELU: it makes a region of its own.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0, %arg1)
// CHECK: whale.gelu
// CHECK: whale.unary_grad gelu
// CHECK: whale.fused_yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[M:.*]] = whale.matmul %[[R]]#0
// CHECK: %[[S:.*]] = whale.fused(%[[M]], %[[R]]#1)
// CHECK: return %[[S]]
func.func @two_results(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %g = whale.gelu %x : tensor<4x8xf32>
  %d = whale.unary_grad gelu %x, %g, %dy : tensor<4x8xf32>
  %m = whale.matmul %g, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = whale.add %m, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// An op outside the chain reads its first value before the chain goes on:
// the rest starts a region of its own, after that reader.
// CHECK-LABEL: func.func @read_between
// CHECK: %[[A:.*]] = whale.fused(%arg0)
// CHECK: whale.exp
// CHECK: %[[M:.*]] = whale.matmul %[[A]]
// CHECK: whale.fused(%[[A]], %[[M]])
// CHECK: whale.mul
// CHECK: whale.neg
func.func @read_between(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = whale.exp %x : tensor<4x4xf32>
  %m = whale.matmul %e, %e : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %p = whale.mul %e, %m : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %n = whale.neg %p : tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}

// -----

// Ops of another iteration shape, sums of what no chain makes (they
// would be the runtime's reduction over again), other element types and
// other ops are left as they are.
// CHECK-LABEL: func.func @not_fused
// CHECK: whale.fused(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.relu
// CHECK-NEXT: whale.fused_yield
// CHECK: whale.binary_grad add %arg0, %arg1, %arg0 operand = 1
// CHECK: whale.reduce_sum %arg0
// CHECK: whale.fused(
// CHECK: whale.add {{.*}} tensor<16xf32>, tensor<16xf32>
// CHECK: whale.add {{.*}} : tensor<4xf64>
// CHECK: whale.softmax
func.func @not_fused(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %d: tensor<4xf64>) -> (tensor<16xf32>, tensor<4xf64>, tensor<8x16xf32>, tensor<8xf32>) {
  %r = whale.relu %x : tensor<8x16xf32>
  %db = whale.binary_grad add %x, %b, %x operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  %rs = whale.reduce_sum %x axes = [1] : tensor<8x16xf32> -> tensor<8xf32>
  %s = whale.add %db, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %e = whale.add %d, %d : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %sm = whale.softmax %r axis = 1 : tensor<8x16xf32>
  return %s, %e, %sm, %rs : tensor<16xf32>, tensor<4xf64>, tensor<8x16xf32>, tensor<8xf32>
}

// -----

// GELU's gradient and the bias's gradient that sums it: one region with
// both as results, so the gradient is read once. A sum ends its chain:
// the op that reads it starts a region of its own.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0, %arg2, %arg1)
// CHECK: whale.unary_grad gelu
// CHECK-NEXT: whale.binary_grad add {{.*}} operand = 1
// CHECK-NEXT: whale.fused_yield %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: whale.matmul %[[R]]#0
// CHECK-NEXT: whale.fused(%[[R]]#1, %arg1)
// CHECK: whale.mul
func.func @bias_gradient(%h: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<16xf32>, tensor<8x16xf32>) {
  %g = whale.gelu %h : tensor<8x16xf32>
  %d = whale.unary_grad gelu %h, %g, %dy : tensor<8x16xf32>
  %db = whale.binary_grad add %h, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  %dx = whale.matmul %d, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %s = whale.mul %db, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %s, %dx : tensor<16xf32>, tensor<8x16xf32>
}

// -----

// What reads a sum is not in the loop that makes it: x - mean(x) starts
// a region of its own after the mean's.
// CHECK-LABEL: func.func @centered
// CHECK: %[[M:.*]]:2 = whale.fused(%arg0)
// CHECK: whale.exp
// CHECK-NEXT: whale.reduce_mean
// CHECK-NEXT: whale.fused_yield
// CHECK: whale.fused(%[[M]]#0, %[[M]]#1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.sub
// CHECK-NEXT: whale.fused_yield
func.func @centered(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = whale.exp %x : tensor<8x4xf32>
  %m = whale.reduce_mean %e axes = [1] {keepdim} : tensor<8x4xf32> -> tensor<8x1xf32>
  %c = whale.sub %e, %m : tensor<8x4xf32>, tensor<8x1xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}

// -----

// A squared error's mean: the difference, its square and the mean in one
// region whose only result is the scalar; nothing of the batch's shape
// is stored.
// CHECK-LABEL: func.func @mean_squared_error
// CHECK: %[[R:.*]] = whale.fused(%arg0, %arg1) : (tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<f32>)
// CHECK: whale.sub
// CHECK-NEXT: whale.mul
// CHECK-NEXT: whale.reduce_mean {{.*}} axes = [0, 1]
// CHECK-NEXT: whale.fused_yield %{{.*}} : tensor<f32>
// CHECK: return %[[R]]
func.func @mean_squared_error(%y: tensor<8x4xf32>, %t: tensor<8x4xf32>) -> tensor<f32> {
  %d = whale.sub %y, %t : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %q = whale.mul %d, %d : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %m = whale.reduce_mean %q axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
  return %m : tensor<f32>
}

// -----

// The gradient of a sum's operand of the output's shape is the output's
// gradient: forwarded, with nothing to compute. A difference's right one
// is its negation, computed in a region.
// CHECK-LABEL: func.func @identity_gradients
// CHECK-NOT: binary_grad
// CHECK: %[[N:.*]] = whale.fused(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.binary_grad sub {{.*}} operand = 1
// CHECK-NEXT: whale.fused_yield
// CHECK: return %arg2, %arg2, %[[N]]
func.func @identity_gradients(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %dy: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %da = whale.binary_grad add %a, %b, %dy operand = 0 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dsa = whale.binary_grad sub %a, %b, %dy operand = 0 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dsb = whale.binary_grad sub %a, %b, %dy operand = 1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %da, %dsa, %dsb : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Not where an all-reduce sums the gradient in place: it must stay the
// all-reduce's only operand's reader, so a copy is made.
// CHECK-LABEL: func.func @in_place_reader
// CHECK: %[[G:.*]] = whale.fused(%arg0, %arg1, %arg2)
// CHECK: whale.all_reduce %[[G]]
func.func @in_place_reader(%a: tensor<4xf32>, %b: tensor<4xf32>, %dy: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %da = whale.binary_grad add %a, %b, %dy operand = 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = whale.all_reduce %da over "replicas" : tensor<4xf32> -> tensor<4xf32>
  return %s, %dy : tensor<4xf32>, tensor<4xf32>
}

// -----

// Inside a TaskGraph the region stays in its body; the yield reads it.
// CHECK-LABEL: func.func @in_taskgraph
// CHECK: whale.taskgraph replicate
// CHECK: %[[R:.*]] = whale.fused
// CHECK: whale.yield %[[R]]
func.func @in_taskgraph(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = whale.taskgraph replicate -> (tensor<4x4xf32>) {
    %n = whale.neg %x : tensor<4x4xf32>
    %e = whale.exp %n : tensor<4x4xf32>
    whale.yield %e : tensor<4x4xf32>
  }
  return %t : tensor<4x4xf32>
}

// -----

// The cost of a region: its body's FLOPs (an add 1 and a GELU 8 per
// element), the bytes of its inputs and result only (the sum is never
// stored); the function's totals count the region once.
// RUN: whale-opt %s -split-input-file -whale-fuse-elementwise -whale-annotate-cost | FileCheck %s --check-prefix=COST
// COST-LABEL: func.func @priced{{.*}}whale.cost = {bytes_read = 576 : i64, bytes_written = 512 : i64, flops = 1152 : i64, memory = 512 : i64}
// COST: whale.fused{{.*}}whale.cost = {bytes_read = 576 : i64, bytes_written = 512 : i64, flops = 1152 : i64, memory = 512 : i64}
func.func @priced(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %s = whale.add %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %g = whale.gelu %s : tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

// A bias gradient's region reads only the gradient it sums: the addends
// its formula names are never loaded, and cost no bytes. Read 8x16 of
// the GELU's input and of dy (1024 bytes); write the gradient and the
// sum (512 + 64).
// COST-LABEL: func.func @priced_sum
// COST: whale.fused{{.*}}whale.cost = {bytes_read = 1024 : i64, bytes_written = 576 : i64
func.func @priced_sum(%h: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>) -> (tensor<16xf32>, tensor<8x16xf32>) {
  %g = whale.gelu %h : tensor<8x16xf32>
  %d = whale.unary_grad gelu %h, %g, %dy : tensor<8x16xf32>
  %db = whale.binary_grad add %h, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %db, %d : tensor<16xf32>, tensor<8x16xf32>
}

// -----

// Positions [T, D] added to every sample repeat along the rows (row r
// reads position r mod T): the layernorm after them joins.
// CHECK-LABEL: func.func @positions_layernorm
// CHECK: whale.fused(%arg0, %arg1, %arg2) :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.add
// CHECK-NEXT: whale.layernorm
func.func @positions_layernorm(%x: tensor<2x8x16xf32>, %p: tensor<8x16xf32>, %g: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %s = whale.add %x, %p : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
  %n = whale.layernorm %s, %g, %g eps = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<2x8x16xf32>
}

// -----

// A residual sum and the layernorm of it: one region of rows, with both
// as results (the sum is the next block's residual).
// CHECK-LABEL: func.func @residual_layernorm
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.add
// CHECK-NEXT: whale.layernorm
// CHECK-NEXT: whale.fused_yield
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @residual_layernorm(%x: tensor<8x16xf32>, %h: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %s = whale.add %x, %h : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %n = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %s, %n : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A softmax ends its chain; a softmax over another axis, one of what no
// chain makes, and one whose chain reads a value broadcast along a middle
// dimension (not a row a kernel of rows reads) stay the runtime's.
// CHECK-LABEL: func.func @softmaxes
// CHECK: whale.fused(%arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.mul
// CHECK-NEXT: whale.softmax
// CHECK-NEXT: whale.fused_yield
// CHECK: %[[E:.*]] = whale.fused(%arg0)
// CHECK: whale.softmax %[[E]] axis = 0
// CHECK: whale.softmax %arg0 axis = 2
// CHECK: %[[M:.*]] = whale.fused(%arg0, %arg2)
// CHECK: whale.softmax %[[M]] axis = -1
func.func @softmaxes(%x: tensor<2x8x16xf32>, %k: tensor<f32>, %c: tensor<2x1x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %m = whale.mul %x, %k : tensor<2x8x16xf32>, tensor<f32> -> tensor<2x8x16xf32>
  %p = whale.softmax %m axis = -1 : tensor<2x8x16xf32>
  %e = whale.exp %x : tensor<2x8x16xf32>
  %q = whale.softmax %e axis = 0 : tensor<2x8x16xf32>
  %r = whale.softmax %x axis = 2 : tensor<2x8x16xf32>
  %a = whale.add %x, %c : tensor<2x8x16xf32>, tensor<2x1x16xf32> -> tensor<2x8x16xf32>
  %t = whale.softmax %a axis = -1 : tensor<2x8x16xf32>
  return %p, %q, %r, %t : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// A region of rows has no sums: the bias gradient of a chain that also
// ends in a layernorm stays outside it.
// CHECK-LABEL: func.func @rows_or_sums
// CHECK: %[[R:.*]]:2 = whale.fused
// CHECK: whale.layernorm
// CHECK: whale.binary_grad add %arg0, %arg1, %[[R]]#0 operand = 1
func.func @rows_or_sums(%x: tensor<8x16xf32>, %g: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %e = whale.exp %x : tensor<8x16xf32>
  %n = whale.layernorm %e, %g, %g eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %db = whale.binary_grad add %x, %g, %e operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %n, %db : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// A parameter read between the chain and its layernorm allocates
// nothing (it names the context's memory): the layernorm still joins, and
// the region stands after the parameters.
// CHECK-LABEL: func.func @parameters_between
// CHECK: %[[G:.*]] = whale.param "m/gamma"
// CHECK: %[[B:.*]] = whale.param "m/beta"
// CHECK: whale.fused(%arg0, %arg1, %[[G]], %[[B]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: whale.add
// CHECK-NEXT: whale.layernorm
func.func @parameters_between(%x: tensor<8x16xf32>, %h: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = whale.add %x, %h : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %g = whale.param "m/gamma" ones [] : tensor<16xf32>
  %b = whale.param "m/beta" zeros [] : tensor<16xf32>
  %n = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<8x16xf32>
}

// -----

// A norm's input gradient added to the residual's (a pre-norm block's
// backward): the norm's gradient takes the sum as `plus` on every plan
// that fuses, before the element ops group; the sum is no region.
// CHECK-LABEL: func.func @norm_residuals
// CHECK-NOT: whale.fused
// CHECK: %[[DX:.*]], %[[DW:.*]] = whale.rms_norm_grad %arg0, %arg1, %arg2 plus %arg3 eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>
// CHECK: %[[LX:.*]], %{{.*}}, %{{.*}} = whale.layernorm_grad %arg0, %arg1, %arg2 plus %[[DX]] eps = 1.000000e-05
// CHECK: return %[[LX]], %[[DW]]
func.func @norm_residuals(%x: tensor<8x16xf32>, %w: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %dx, %dw = whale.rms_norm_grad %x, %w, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s = whale.add %r, %dx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %lx, %lg, %lb = whale.layernorm_grad %x, %w, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s2 = whale.add %lx, %s : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %s2, %dw : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// A Llama block's residual sum and its RMSNorm: one region of rows ending
// in the norm, the sum (the next block's residual) a result too; the
// weight is the region's input.
// CHECK-LABEL: func.func @residual_rmsnorm
// CHECK: %[[R:.*]]:2 = whale.fused(%arg0, %arg1, %arg2) : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8x16xf32>, %[[Y:.*]]: tensor<4x8x16xf32>, %[[W:.*]]: tensor<16xf32>):
// CHECK-NEXT: %[[S:.*]] = whale.add %[[X]], %[[Y]]
// CHECK-NEXT: %[[N:.*]] = whale.rms_norm %[[S]], %[[W]] eps = 1.000000e-05
// CHECK-NEXT: whale.fused_yield %[[S]], %[[N]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @residual_rmsnorm(%x: tensor<4x8x16xf32>, %y: tensor<4x8x16xf32>, %w: tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %s = whale.add %x, %y : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>
  %n = whale.rms_norm %s, %w eps = 1.000000e-05 : tensor<4x8x16xf32>, tensor<16xf32>
  return %s, %n : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}
