// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @weight_rank(%x: tensor<8x16xf32>, %w: tensor<2x16x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{weight 'tensor<2x16x4xf32>' must be a matrix}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<2x16x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @bias_shape(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{bias 'tensor<1x4xf32>' must be [4], one value a column}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<1x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @contracting(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{contracting dimensions differ: 16 vs 4}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @bf16_bias(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{bias must be f32, got 'tensor<4xbf16>'}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<4xbf16> -> tensor<8x4xbf16>
  return
}

// -----

func.func @mixed_operands(%x: tensor<8x16xbf16>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{takes its product's operands all f32 or all bf16 (amp's storage), got 'tensor<16x4xf32>'}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xbf16>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @bf16_result_of_f32(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result must be f32, got 'tensor<8x4xbf16>'}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
  return
}

// -----

func.func @bf16_preactivation_type(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{preactivation 'tensor<8x5xf32>' must be the result's type, or its shape in f32}}
  %0, %1 = whale.linear %x, %w, %b gelu : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<4xf32> -> tensor<8x4xbf16>, tensor<8x5xf32>
  return
}

// -----

func.func @result(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result should have shape [8, 4] but has 'tensor<8x5xf32>'}}
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x5xf32>
  return
}

// -----

func.func @preactivation_without_gelu(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{has a preactivation only with gelu}}
  %0, %1 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @weight_grad_rows(%x: tensor<8x16xf32>, %dy: tensor<4x32xf32>) {
  // expected-error @+1 {{input 'tensor<8x16xf32>' and dout 'tensor<4x32xf32>' must share every dimension but the last}}
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xf32>, tensor<4x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @weight_grad_transposed(%x: tensor<8x16xf32>, %dy: tensor<8x32xf32>) {
  // expected-error @+1 {{dweight}}
  %0:2 = whale.linear_weight_grad %x, %dy {transpose_weight} : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @weight_grad_bias(%x: tensor<8x16xf32>, %dy: tensor<8x32xf32>) {
  // expected-error @+1 {{dbias}}
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<16xf32>
  return
}

// -----

func.func @weight_grad_bf16_dweight(%x: tensor<8x16xbf16>, %dy: tensor<8x32xbf16>) {
  // expected-error @+1 {{dweight must be f32, got 'tensor<16x32xbf16>'}}
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xbf16>, tensor<32xf32>
  return
}

// -----

func.func @weight_grad_mixed(%x: tensor<8x16xbf16>, %dy: tensor<8x32xf32>) {
  // expected-error @+1 {{takes its product's operands all f32 or all bf16 (amp's storage), got 'tensor<8x32xf32>'}}
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xbf16>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @gelu_grad_bf16_of_f32(%pre: tensor<8x64xbf16>, %w: tensor<64x16xf32>, %dy: tensor<8x16xf32>) {
  // expected-error @+1 {{preactivation must be f32, got 'tensor<8x64xbf16>'}}
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xbf16>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xbf16>
  return
}

// -----

func.func @gelu_grad_dout(%pre: tensor<8x64xf32>, %w: tensor<64x16xf32>, %dy: tensor<8x32xf32>) {
  // expected-error @+1 {{dout}}
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x32xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @gelu_grad_result(%pre: tensor<8x64xf32>, %w: tensor<64x16xf32>, %dy: tensor<8x16xf32>) {
  // expected-error @+1 {{result 'tensor<8x16xf32>' must be the preactivation's type 'tensor<8x64xf32>'}}
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @gelu_grad_weight(%pre: tensor<8x64xf32>, %w: tensor<2x64x16xf32>, %dy: tensor<8x16xf32>) {
  // expected-error @+1 {{weight 'tensor<2x64x16xf32>' must be a matrix}}
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<2x64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @layernorm_grad_residual_type(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{residual must have the input's type 'tensor<8x16xf32>', got 'tensor<4x16xf32>'}}
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy plus %r eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<4x16xf32>
  return %dx : tensor<8x16xf32>
}

// -----

func.func @round_and_sum_bf16_input(%dy: tensor<8x32xbf16>) {
  // expected-error @+1 {{input must be f32, got 'tensor<8x32xbf16>'}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<32xf32>
  return
}

// -----

func.func @round_and_sum_rounded_type(%dy: tensor<8x32xf32>) {
  // expected-error @+1 {{rounded 'tensor<8x32xf32>' must be the input's shape in bf16, 'tensor<8x32xbf16>'}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<32xf32>
  return
}

// -----

func.func @round_and_sum_rounded_shape(%dy: tensor<8x32xf32>) {
  // expected-error @+1 {{rounded 'tensor<4x32xbf16>' must be the input's shape in bf16}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<4x32xbf16>, tensor<32xf32>
  return
}

// -----

func.func @round_and_sum_bf16_sum(%dy: tensor<8x32xf32>) {
  // expected-error @+1 {{sum must be f32, got 'tensor<32xbf16>'}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xbf16>, tensor<32xbf16>
  return
}

// -----

func.func @round_and_sum_columns(%dy: tensor<8x32xf32>) {
  // expected-error @+1 {{sum 'tensor<8xf32>' must be the input's last dimensions}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xbf16>, tensor<8xf32>
  return
}

// -----

func.func @round_and_sum_nothing_summed(%dy: tensor<8x32xf32>) {
  // expected-error @+1 {{summed over one leading dimension at least}}
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xbf16>, tensor<8x32xf32>
  return
}

// -----

func.func @rounded_loss_grad_dloss(%l: tensor<8x100xbf16>, %y: tensor<8xi32>, %d: tensor<8xbf16>) {
  // expected-error @+1 {{dloss must be f32, got 'tensor<8xbf16>'}}
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xbf16> -> tensor<8x100xbf16>, tensor<100xf32>
  return
}

// -----

func.func @rounded_loss_grad_labels(%l: tensor<8x100xbf16>, %y: tensor<4xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{labels 'tensor<4xi32>' and dloss 'tensor<8xf32>' must be the logits without their class dimension}}
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<8x100xbf16>, tensor<4xi32>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<100xf32>
  return
}

// -----

func.func @rounded_loss_grad_one_row(%l: tensor<100xbf16>, %y: tensor<i32>, %d: tensor<f32>) {
  // expected-error @+1 {{logits 'tensor<100xbf16>' need a row dimension and the class dimension}}
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<100xbf16>, tensor<i32>, tensor<f32> -> tensor<100xbf16>, tensor<100xf32>
  return
}

// -----

func.func @rounded_loss_grad_f32(%l: tensor<8x100xbf16>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{rounded 'tensor<8x100xf32>' must be the logits' shape in bf16}}
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> tensor<8x100xf32>, tensor<100xf32>
  return
}

// -----

func.func @rounded_loss_grad_sum(%l: tensor<8x100xbf16>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  // expected-error @+1 {{sum 'tensor<8xf32>' must be the logits' last dimensions}}
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<8xf32>
  return
}
