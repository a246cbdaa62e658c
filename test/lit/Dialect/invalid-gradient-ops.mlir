// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @matmul_dout(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x5xf32>) {
  // expected-error @+1 {{dout should have shape [8, 4] but has 'tensor<8x5xf32>'}}
  %0 = whale.matmul_grad %a, %b, %d operand = 0 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x5xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{the gradient of operand 1 must be 'tensor<16x4xf32>', got 'tensor<8x16xf32>'}}
  %0 = whale.matmul_grad %a, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_grad_element(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{result element type 'bf16' must be the operands' ('f32')}}
  %0 = whale.matmul_grad %a, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<16x4xbf16>
  return
}

// -----

func.func @matmul_grad_dout(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{operand and dout element types differ: 'bf16' vs 'f32'}}
  %0 = whale.matmul_grad %a, %b, %d operand = 1 : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<8x4xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @matmul_operand(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{attribute 'operand' failed to satisfy constraint}}
  %0 = whale.matmul_grad %a, %b, %d operand = 2 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @binary_broadcast(%a: tensor<8x4xf32>, %b: tensor<3xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{operand shapes do not broadcast: 'tensor<8x4xf32>' and 'tensor<3xf32>'}}
  %0 = whale.binary_grad mul %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<3xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @binary_dout(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{dout should have shape [8, 4] but has 'tensor<4xf32>'}}
  %0 = whale.binary_grad mul %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @binary_result(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{the gradient of operand 1 must be 'tensor<4xf32>', got 'tensor<8x4xf32>'}}
  %0 = whale.binary_grad sub %a, %b, %d operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @binary_types(%a: tensor<8x4xf32>, %b: tensor<4xf16>, %d: tensor<8x4xf32>) {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'f16'}}
  %0 = whale.binary_grad add %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf16>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @binary_dout_type(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<8x4xf16>) {
  // expected-error @+1 {{operand and dout element types differ: 'f32' vs 'f16'}}
  %0 = whale.binary_grad add %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf16> -> tensor<8x4xf32>
  return
}

// -----

func.func @unary_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown function 'swish'}}
  %0 = whale.unary_grad swish %x, %x, %x : tensor<4xf32>
  return
}

// -----

func.func @softmax_axis(%y: tensor<8x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.softmax_grad %y, %y axis = 2 : tensor<8x4xf32>
  return
}

// -----

func.func @mask_rank(%d: tensor<4xf32>) {
  // expected-error @+1 {{needs rank >= 2 (query and key positions)}}
  %0 = whale.causal_mask_grad %d : tensor<4xf32>
  return
}

// -----

func.func @ln_rank(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{input needs rank >= 1}}
  %0:3 = whale.layernorm_grad %x, %g, %x eps = 1.0e-5 : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @ln_gamma(%x: tensor<8x4xf32>, %g: tensor<5xf32>) {
  // expected-error @+1 {{gamma should have shape [4] but has 'tensor<5xf32>'}}
  %0:3 = whale.layernorm_grad %x, %g, %x eps = 1.0e-5 : tensor<8x4xf32>, tensor<5xf32>
  return
}

// -----

func.func @ln_eps(%x: tensor<8x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %0:3 = whale.layernorm_grad %x, %g, %x eps = 0.0 : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @emb_rank(%ids: tensor<2xi32>, %d: tensor<2x4xf32>) {
  // expected-error @+1 {{the table gradient needs rank 2 [vocab, dim], got 'tensor<40xf32>'}}
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<2x4xf32> -> tensor<40xf32>
  return
}

// -----

func.func @emb_dout(%ids: tensor<2xi32>, %d: tensor<3x4xf32>) {
  // expected-error @+1 {{dout should have shape [2, 4] but has 'tensor<3x4xf32>'}}
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<3x4xf32> -> tensor<10x4xf32>
  return
}

// -----

func.func @emb_type(%ids: tensor<2xi32>, %d: tensor<2x4xf16>) {
  // expected-error @+1 {{dout and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<2x4xf16> -> tensor<10x4xf32>
  return
}

// -----

func.func @ce_rank(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error @+1 {{logits need rank >= 1 (the class dimension last)}}
  %0 = whale.cross_entropy_grad %l, %y, %l : tensor<f32>, tensor<i32>, tensor<f32>
  return
}

// -----

func.func @ce_labels(%l: tensor<8x4xf32>, %y: tensor<4xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{labels should have shape [8] but has 'tensor<4xi32>'}}
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<4xi32>, tensor<8xf32>
  return
}

// -----

func.func @ce_dloss(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{dloss should have shape [8] but has 'tensor<4xf32>'}}
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<8xi32>, tensor<4xf32>
  return
}

// -----

func.func @ce_type(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<8xf16>) {
  // expected-error @+1 {{dloss element type 'f16' must be the operands' ('f32')}}
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf16>
  return
}

// -----

// bf16 logits beside an f32 loss: the gradient is the loss's type.
func.func @ce_result_type(%l: tensor<8x4xbf16>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{dloss and result element types differ: 'f32' vs 'bf16'}}
  %0 = "whale.cross_entropy_grad"(%l, %y, %d) : (tensor<8x4xbf16>, tensor<8xi32>, tensor<8xf32>) -> tensor<8x4xbf16>
  return
}

// -----

func.func @ce_result_shape(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{result should have shape [8, 4] but has 'tensor<8x2xf32>'}}
  %0 = "whale.cross_entropy_grad"(%l, %y, %d) : (tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @ce_gradient_element(%l: tensor<8x4xbf16>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{expected the gradients' float element type after '->', got 'i32'}}
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xbf16>, tensor<8xi32>, tensor<8xf32> -> i32
  return
}

// -----

func.func @reduce_axis(%x: tensor<8x4xf32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.reduce_grad sum %x, %d axes = [2] : tensor<8x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @reduce_order(%x: tensor<8x4xf32>, %d: tensor<f32>) {
  // expected-error @+1 {{axes must be sorted and distinct}}
  %0 = whale.reduce_grad sum %x, %d axes = [1, 0] : tensor<8x4xf32>, tensor<f32>
  return
}

// -----

func.func @reduce_dout(%x: tensor<8x4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{dout 'tensor<4xf32>' does not have the 8 elements of the reduction}}
  %0 = whale.reduce_grad mean %x, %d axes = [1] : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @reduce_type(%x: tensor<8x4xf32>, %d: tensor<8xf16>) {
  // expected-error @+1 {{input and dout element types differ: 'f32' vs 'f16'}}
  %0 = whale.reduce_grad mean %x, %d axes = [1] : tensor<8x4xf32>, tensor<8xf16>
  return
}

// -----

func.func @slice_axis(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.slice_grad %d axis = 2, start = 0 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @slice_rank(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{dout and result differ in rank}}
  %0 = whale.slice_grad %d axis = 0, start = 0 : tensor<8x2xf32> -> tensor<16xf32>
  return
}

// -----

func.func @slice_dims(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{dout and result differ in dimension 0 which is not the slice axis}}
  %0 = whale.slice_grad %d axis = 1, start = 0 : tensor<8x2xf32> -> tensor<9x4xf32>
  return
}

// -----

func.func @slice_fit(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{a slice of 2 at 3 does not fit in 4}}
  %0 = whale.slice_grad %d axis = 1, start = 3 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}

// -----

// A negative start is no place in the result (I64Attr reads back unsigned,
// which once wrapped past the check).
func.func @slice_negative_start(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{a slice of 2 at -1 does not fit in 4}}
  %0 = whale.slice_grad %d axis = 1, start = -1 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @slice_type(%d: tensor<8x2xf32>) {
  // expected-error @+1 {{dout and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.slice_grad %d axis = 1, start = 0 : tensor<8x2xf32> -> tensor<8x4xf16>
  return
}
