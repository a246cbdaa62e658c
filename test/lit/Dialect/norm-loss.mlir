// RUN: whale-opt %s | whale-opt | FileCheck %s

// CHECK-LABEL: func.func @norms
// CHECK: whale.softmax %{{.*}} axis = -1 : tensor<8x16xf32>
// CHECK: whale.softmax %{{.*}} axis = 0 : tensor<8x16xf32>
// CHECK: whale.layernorm %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
func.func @norms(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  %0 = whale.softmax %x axis = -1 : tensor<8x16xf32>
  %1 = whale.softmax %x axis = 0 : tensor<8x16xf32>
  %2 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// CHECK-LABEL: func.func @lookup_and_loss
// CHECK: whale.embedding %{{.*}}[%{{.*}}] : tensor<256x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
// CHECK: whale.cross_entropy %{{.*}}, %{{.*}} : tensor<4x32x256xf32>, tensor<4x32xi32> -> tensor<4x32xf32>
// CHECK: whale.cross_entropy %{{.*}}, %{{.*}} : tensor<8x100000xf32>, tensor<8xi64> -> tensor<8xf32>
func.func @lookup_and_loss(%t: tensor<256x64xf32>, %ids: tensor<4x32xi32>, %l: tensor<4x32x256xf32>, %big: tensor<8x100000xf32>, %y: tensor<8xi64>) {
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
  %1 = whale.cross_entropy %l, %ids : tensor<4x32x256xf32>, tensor<4x32xi32> -> tensor<4x32xf32>
  %2 = whale.cross_entropy %big, %y : tensor<8x100000xf32>, tensor<8xi64> -> tensor<8xf32>
  return
}

// -----

// Fused attention and its gradient round-trip.
// CHECK-LABEL: func.func @attention
// CHECK: whale.attention %arg0, %arg1, %arg1 scale = 5.000000e-01 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
// CHECK: whale.attention_grad %arg0, %arg1, %arg1, %{{.*}}, %arg0 scale = 5.000000e-01 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
func.func @attention(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %q scale = 0.5 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  return %dq : tensor<2x8x4xf32>
}

// -----

// Grouped-query attention: two key and value heads serve eight query
// heads, head-major and sequence-major; the key gradients are the keys'.
// CHECK-LABEL: func.func @attention_grouped
// CHECK: whale.attention %arg0, %arg1, %arg1 scale = 2.500000e-01 causal : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
// CHECK: whale.attention_grad {{.*}} : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
// CHECK: whale.attention %arg2, %arg3, %arg3 scale = 2.500000e-01 sequence_major : tensor<2x6x8x16xf32>, tensor<2x5x2x16xf32>
func.func @attention_grouped(%q: tensor<2x8x6x16xf32>, %k: tensor<2x2x6x16xf32>, %sq: tensor<2x6x8x16xf32>, %sk: tensor<2x5x2x16xf32>) -> (tensor<2x2x6x16xf32>, tensor<2x6x8x16xf32>) {
  %o = whale.attention %q, %k, %k scale = 0.25 causal : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %q scale = 0.25 causal : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
  %s = whale.attention %sq, %sk, %sk scale = 0.25 sequence_major : tensor<2x6x8x16xf32>, tensor<2x5x2x16xf32>
  return %dk, %s : tensor<2x2x6x16xf32>, tensor<2x6x8x16xf32>
}

// -----

// Under amp's storage: attention on bf16 operands (its output bf16), and
// its gradient from them with dout and the gradients in f32, which the
// types say after an arrow.
// CHECK-LABEL: func.func @attention_bf16
// CHECK: %[[O:.*]] = whale.attention %arg0, %arg1, %arg1 scale = 5.000000e-01 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16>
// CHECK: whale.attention_grad %arg0, %arg1, %arg1, %[[O]], %arg2 scale = 5.000000e-01 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16> -> f32
// CHECK-SAME: {{$}}
func.func @attention_bf16(%q: tensor<2x8x3x4xbf16>, %k: tensor<2x8x3x4xbf16>, %d: tensor<2x8x3x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>) {
  %o = whale.attention %q, %k, %k scale = 0.5 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %d scale = 0.5 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16> -> f32
  return %dq, %dv : tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>
}
