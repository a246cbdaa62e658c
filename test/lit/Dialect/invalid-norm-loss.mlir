// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @softmax_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.softmax %x axis = 2 : tensor<8x16xf32>
  return
}

// -----

func.func @ln_rank(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{input needs rank >= 1}}
  %0 = whale.layernorm %x, %g, %g eps = 1.0e-5 : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return
}

// -----

func.func @ln_gamma(%x: tensor<8x16xf32>, %g: tensor<8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{gamma should have shape [16] but has 'tensor<8xf32>'}}
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<8xf32>, tensor<16xf32>
  return
}

// -----

func.func @ln_beta(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{beta should have shape [16] but has 'tensor<4xf32>'}}
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<4xf32>
  return
}

// -----

func.func @ln_gamma_type(%x: tensor<8x16xf32>, %g: tensor<16xbf16>, %b: tensor<16xf32>) {
  // expected-error @+1 {{input and gamma element types differ: 'f32' vs 'bf16'}}
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xbf16>, tensor<16xf32>
  return
}

// -----

func.func @ln_beta_type(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf16>) {
  // expected-error @+1 {{input and beta element types differ: 'f32' vs 'f16'}}
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf16>
  return
}

// -----

func.func @ln_eps(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %0 = whale.layernorm %x, %g, %g eps = 0.0 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @ln_result(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = "whale.layernorm"(%x, %g, %g) <{eps = 1.0e-5 : f64}> : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @emb_table(%t: tensor<256xf32>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{table needs rank 2 [vocab, dim], got 'tensor<256xf32>'}}
  %0 = whale.embedding %t[%ids] : tensor<256xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @emb_result(%t: tensor<256x64xf32>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{result should have shape [4, 64] but has 'tensor<4x32xf32>'}}
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4xi32> -> tensor<4x32xf32>
  return
}

// -----

func.func @emb_type(%t: tensor<256x64xf32>, %ids: tensor<4xi32>) {
  // expected-error @+1 {{table and result element types differ: 'f32' vs 'bf16'}}
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4xi32> -> tensor<4x64xbf16>
  return
}

// -----

func.func @emb_ids(%t: tensor<256x64xf32>, %ids: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4xf32> -> tensor<4x64xf32>
  return
}

// -----

func.func @ce_rank(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error @+1 {{logits need rank >= 1 (the class dimension last)}}
  %0 = whale.cross_entropy %l, %y : tensor<f32>, tensor<i32> -> tensor<f32>
  return
}

// -----

func.func @ce_labels(%l: tensor<8x10xf32>, %y: tensor<10xi32>) {
  // expected-error @+1 {{labels 'tensor<10xi32>' should match the logits without their class dimension}}
  %0 = whale.cross_entropy %l, %y : tensor<8x10xf32>, tensor<10xi32> -> tensor<8xf32>
  return
}

// -----

func.func @ce_result(%l: tensor<8x10xf32>, %y: tensor<8xi32>) {
  // expected-error @+1 {{result should have shape [8] but has 'tensor<f32>'}}
  %0 = whale.cross_entropy %l, %y : tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
  return
}

// -----

func.func @ce_type(%l: tensor<8x10xf32>, %y: tensor<8xi32>) {
  // expected-error @+1 {{result element type 'bf16' must be the operands' ('f32')}}
  %0 = whale.cross_entropy %l, %y : tensor<8x10xf32>, tensor<8xi32> -> tensor<8xbf16>
  return
}

// -----

func.func @attention_causal_lengths(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{a causal attention needs as many keys (6) as queries (8)}}
  %o = whale.attention %q, %k, %k scale = 0.5 causal : tensor<8x4xf32>, tensor<6x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @attention_widths(%q: tensor<8x4xf32>, %k: tensor<8x5xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{query and key widths differ: 4 and 5}}
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<8x4xf32>, tensor<8x5xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @attention_sequence_major_rank(%q: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{must be [..., T, H, E] of one rank >= 3}}
  %o = whale.attention %q, %q, %q scale = 0.5 sequence_major : tensor<8x4xf32>, tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

func.func @attention_sequence_major_heads(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{key heads (3) must divide query heads (4)}}
  %o = whale.attention %q, %k, %k scale = 0.5 sequence_major : tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

func.func @attention_grouped_heads(%q: tensor<2x6x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x6x8x16xf32> {
  // expected-error @+1 {{key heads (4) must divide query heads (6)}}
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<2x6x8x16xf32>, tensor<2x4x8x16xf32>
  return %o : tensor<2x6x8x16xf32>
}

// -----

func.func @attention_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<3x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{differ in a dimension other than T, E and the heads}}
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<2x4x8x16xf32>, tensor<3x2x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_grad_grouped_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{key heads (3) must divide query heads (4)}}
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %q scale = 0.5 : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>
  return %dq : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_sequence_major_causal(%q: tensor<2x8x4x16xf32>, %k: tensor<2x6x4x16xf32>) -> tensor<2x8x4x16xf32> {
  // expected-error @+1 {{a causal attention needs as many keys (6) as queries (8)}}
  %o = whale.attention %q, %k, %k scale = 0.5 causal sequence_major : tensor<2x8x4x16xf32>, tensor<2x6x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}

// -----

func.func @attention_mixed_types(%q: tensor<8x4xbf16>, %k: tensor<8x4xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{query and key element types differ: 'bf16' vs 'f32'}}
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xf32>
  return %o : tensor<8x4xbf16>
}

// -----

func.func @attention_grad_mixed_operands(%q: tensor<8x4xbf16>, %k: tensor<8x4xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{query and key element types differ: 'bf16' vs 'f32'}}
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %d scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xf32> -> f32
  return
}

// -----

func.func @attention_grad_f16_gradients(%q: tensor<8x4xbf16>, %d: tensor<8x4xf16>) {
  // expected-error @+1 {{dout and the gradients are 'f16'; expected the operands' 'bf16' or f32}}
  %dq, %dk, %dv = whale.attention_grad %q, %q, %q, %q, %d scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xbf16> -> f16
  return
}

// -----

func.func @attention_grad_causal_lengths(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) {
  // expected-error @+1 {{a causal attention needs as many keys (6) as queries (8)}}
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %q scale = 0.5 causal : tensor<8x4xf32>, tensor<6x4xf32>
  return
}

// -----

func.func @attention_grad_gradient_type(%q: tensor<8x4xbf16>) {
  // expected-error @+1 {{expected the gradients' float element type after '->', got 'tensor<4xf32>'}}
  %dq, %dk, %dv = whale.attention_grad %q, %q, %q, %q, %q scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xbf16> -> tensor<4xf32>
  return
}
