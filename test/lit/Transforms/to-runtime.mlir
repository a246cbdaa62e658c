// RUN: whale-opt %s -split-input-file --whale-to-runtime | FileCheck %s

// A model becomes `i32 @name(ctx, inputs, result)`: inputs loaded from the
// array, each op an output tensor plus one runtime call, every status
// checked, intermediates released after their last use.

// CHECK-LABEL: llvm.func @m(
// CHECK-SAME: %[[CTX:[a-z0-9]+]]: !llvm.ptr, %[[IN:[a-z0-9]+]]: !llvm.ptr, %[[OUT:[a-z0-9]+]]: !llvm.ptr) -> i32
// CHECK: %[[X:.*]] = llvm.load {{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S:.*]] = llvm.call @whale_rt_param(%[[CTX]], {{.*}}) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: %[[F:.*]] = llvm.icmp "ne" %[[S]]
// CHECK: llvm.cond_br %[[F]], ^[[EXIT:bb[0-9]+]](%[[S]] : i32), ^bb
// CHECK: llvm.call @whale_rt_tensor_create
// CHECK: llvm.call @whale_rt_matmul(%[[CTX]], %[[X]], {{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32) -> i32
// CHECK: llvm.call @whale_rt_unary
// CHECK: llvm.call @whale_rt_tensor_release
// CHECK: llvm.call @whale_rt_reduce
// CHECK: llvm.call @whale_rt_tensor_release
// CHECK: %[[R0:.*]] = llvm.getelementptr %[[OUT]][0]
// CHECK: llvm.store %{{.*}}, %[[R0]]
// CHECK: ^[[EXIT]](%[[R:.*]]: i32):
// CHECK-NEXT: llvm.return %[[R]] : i32
// CHECK-NOT: func.func
// CHECK-NOT: whale.
func.func @m(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<8x8xf32>
    %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %r = whale.relu %h : tensor<4x8xf32>
    %s = whale.reduce_mean %r axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
    whale.yield %s : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Shapes, names and initializer numbers are constant globals, shared when
// equal; op codes and attributes are constants of the call.
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}("m/w\00")
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}(dense<[0.000000e+00, 2.000000e-02]> : tensor<2xf64>) {{.*}} : !llvm.array<2 x f64>
// CHECK-DAG: llvm.mlir.global internal constant @{{.*}}(dense<[2, 0, 1]> : tensor<3xi64>) {{.*}} : !llvm.array<3 x i64>
// CHECK-LABEL: llvm.func @ops
// CHECK: %[[SUB:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @whale_rt_binary(%{{.*}}, %[[SUB]],
// CHECK: llvm.call @whale_rt_softmax
// CHECK: llvm.call @whale_rt_layernorm
// CHECK: llvm.call @whale_rt_transpose
// CHECK: llvm.call @whale_rt_slice
// CHECK: llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.call @whale_rt_concat
// CHECK: llvm.call @whale_rt_fill
// CHECK: llvm.call @whale_rt_causal_mask
// CHECK: llvm.call @whale_rt_reshape_take
func.func @ops(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>) -> tensor<24xf32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<2x3x4xf32>
  %a = whale.sub %x, %w : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %s = whale.softmax %a axis = -1 : tensor<2x3x4xf32>
  %n = whale.layernorm %s, %g, %g eps = 1.0e-5 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  %t = whale.transpose %n permutation = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %c = whale.slice %t axis = 0, start = 0, end = 2 : tensor<4x2x3xf32> -> tensor<2x2x3xf32>
  %j = whale.concat %c, %c axis = 0 : tensor<2x2x3xf32>, tensor<2x2x3xf32> -> tensor<4x2x3xf32>
  %k = whale.constant 2.0 : tensor<f32>
  %m = whale.mul %j, %k : tensor<4x2x3xf32>, tensor<f32> -> tensor<4x2x3xf32>
  %q = whale.causal_mask %m : tensor<4x2x3xf32>
  %r = whale.reshape %q : tensor<4x2x3xf32> -> tensor<24xf32>
  return %r : tensor<24xf32>
}

// -----

// A bf16 tensor is made with the runtime's bf16 dtype (4), and a cast is
// one call.
// CHECK-LABEL: llvm.func @casts
// CHECK: %[[BF16:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: llvm.call @whale_rt_tensor_create(%{{.*}}, %[[BF16]],
// CHECK: llvm.call @whale_rt_cast(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK: llvm.call @whale_rt_cast
func.func @casts(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {whale.model} {
  %h = whale.cast %x : tensor<2x3xf32> to tensor<2x3xbf16>
  %f = whale.cast %h : tensor<2x3xbf16> to tensor<2x3xf32>
  return %f : tensor<2x3xf32>
}

// -----

// A reshape copies only where its input lives on: an input (the
// caller's), a value read after it, a value the function returns. Where
// it is its input's last reader it takes the memory, and the input's
// empty handle is released after it as any dead value's.
// CHECK-LABEL: llvm.func @reshapes
// CHECK: %[[X:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @whale_rt_reshape(%{{.*}}, %[[X]],
// CHECK: %[[E:.*]] = llvm.load {{.*}} -> !llvm.ptr
// CHECK: llvm.call @whale_rt_unary(%{{.*}}, %{{.*}}, %{{.*}}, %[[E]])
// CHECK: llvm.call @whale_rt_reshape(%{{.*}}, %[[E]],
// CHECK: llvm.call @whale_rt_binary
// CHECK: %[[N:.*]] = llvm.load {{.*}} -> !llvm.ptr
// CHECK: llvm.call @whale_rt_unary(%{{.*}}, %{{.*}}, %{{.*}}, %[[N]])
// CHECK: llvm.call @whale_rt_reshape_take(%{{.*}}, %[[N]], %{{.*}}, %{{.*}}, %[[SLOT:[0-9a-z]+]])
// CHECK: llvm.load %[[SLOT]]
// CHECK: llvm.call @whale_rt_tensor_release(%{{.*}}, %[[N]])
// CHECK-NOT: whale_rt_reshape
// CHECK: llvm.return
func.func @reshapes(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>) attributes {whale.model} {
  %a = whale.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %e = whale.exp %x : tensor<2x3xf32>
  %b = whale.reshape %e : tensor<2x3xf32> -> tensor<6xf32>
  %d = whale.add %e, %e : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %n = whale.neg %x : tensor<2x3xf32>
  %c = whale.reshape %n : tensor<2x3xf32> -> tensor<6xf32>
  return %a, %b, %c, %d : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>
}

// -----

// Embedding and cross entropy take integer ids and labels.
// CHECK-LABEL: llvm.func @lm
// CHECK: llvm.call @whale_rt_embedding
// CHECK: llvm.call @whale_rt_cross_entropy
func.func @lm(%ids: tensor<2x5xi32>) -> tensor<2x5xf32> attributes {whale.model} {
  %t = whale.param "lm/table" normal [0.0, 0.02] : tensor<16x16xf32>
  %e = whale.embedding %t[%ids] : tensor<16x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  %l = whale.cross_entropy %e, %ids : tensor<2x5x16xf32>, tensor<2x5xi32> -> tensor<2x5xf32>
  return %l : tensor<2x5xf32>
}

// -----

// An output nothing reads is released right after the call that made it.
// CHECK-LABEL: llvm.func @dead
// CHECK: llvm.call @whale_rt_unary(%{{.*}}, %{{.*}}, %{{.*}}, %[[DEAD:[0-9]+]])
// CHECK: llvm.call @whale_rt_tensor_release(%{{.*}}, %[[DEAD]])
// CHECK: llvm.call @whale_rt_unary
// CHECK-NOT: llvm.call @whale_rt_tensor_release
// CHECK: llvm.store
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  %unused = whale.exp %x : tensor<4xf32>
  %r = whale.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A linear layer: one call with the bias; with its GELU, the sum before it
// as a second result where the model reads it, a null handle where not.
// CHECK-LABEL: llvm.func @linear(
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.call @whale_rt_linear(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32) -> i32
// CHECK: llvm.call @whale_rt_tensor_create
// CHECK: llvm.call @whale_rt_tensor_create
// CHECK: %[[PRE:.*]] = llvm.load
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @whale_rt_linear(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PRE]], %{{.*}}, %[[ONE]])
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {whale.model} {
  %y = whale.linear %x, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %h, %pre = whale.linear %y, %w, %b gelu : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return %y, %h, %pre : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A linear layer's gradients: the weight's and the bias's in one call, and
// the input's through the GELU before it in one.
// CHECK-LABEL: llvm.func @linear_grads(
// CHECK: llvm.call @whale_rt_linear_weight_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32) -> i32
// CHECK: llvm.call @whale_rt_gelu_matmul_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32) -> i32
func.func @linear_grads(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %dy: tensor<4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>, tensor<4x8xf32>) attributes {whale.model} {
  %dw, %db = whale.linear_weight_grad %x, %dy {transpose_weight} : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<16x8xf32>, tensor<16xf32>
  %dpre = whale.gelu_matmul_grad %x, %w, %dy {transpose_weight} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32> -> tensor<4x8xf32>
  return %dw, %db, %dpre : tensor<16x8xf32>, tensor<16xf32>, tensor<4x8xf32>
}

// -----

// A gradient's rounding with its bias's sum: one call, both results.
// CHECK-LABEL: llvm.func @round_and_sum(
// CHECK: llvm.call @whale_rt_round_and_sum(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
func.func @round_and_sum(%dy: tensor<4x16xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) attributes {whale.model} {
  %r, %db = whale.round_and_sum %dy : tensor<4x16xf32> -> tensor<4x16xbf16>, tensor<16xf32>
  return %r, %db : tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// The loss's gradient rounded and summed: one call, both results.
// CHECK-LABEL: llvm.func @rounded_loss_grad(
// CHECK: llvm.call @whale_rt_cross_entropy_grad_rounded(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
func.func @rounded_loss_grad(%l: tensor<4x16xbf16>, %y: tensor<4xi32>, %d: tensor<4xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) attributes {whale.model} {
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<4x16xbf16>, tensor<4xi32>, tensor<4xf32> -> tensor<4x16xbf16>, tensor<16xf32>
  return %g, %db : tensor<4x16xbf16>, tensor<16xf32>
}

// -----

// A layernorm's gradient with the residual's added: its own call, the
// residual after dy.
// CHECK-LABEL: llvm.func @layernorm_residual(
// CHECK: llvm.call @whale_rt_layernorm_grad_residual(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, f64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NOT: whale_rt_binary
func.func @layernorm_residual(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {whale.model} {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy plus %r eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
  return %dx, %dg, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}
