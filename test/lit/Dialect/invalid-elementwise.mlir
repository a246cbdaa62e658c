// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @broadcast(%a: tensor<8x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{operand shapes do not broadcast: 'tensor<8x16xf32>' and 'tensor<8xf32>'}}
  %0 = whale.add %a, %b : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @dtypes(%a: tensor<8xf32>, %b: tensor<8xi32>) {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'i32'}}
  %0 = whale.mul %a, %b : tensor<8xf32>, tensor<8xi32> -> tensor<8xf32>
  return
}

// -----

func.func @result_dtype(%a: tensor<8xf32>) {
  // expected-error @+1 {{operand and result element types differ: 'f32' vs 'bf16'}}
  %0 = whale.sub %a, %a : tensor<8xf32>, tensor<8xf32> -> tensor<8xbf16>
  return
}

// -----

func.func @result_shape(%a: tensor<8x1xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+1 {{result should have shape [8, 4] but has 'tensor<8x1xf32>'}}
  %0 = whale.div %a, %b : tensor<8x1xf32>, tensor<1x4xf32> -> tensor<8x1xf32>
  return
}

// -----

func.func @unary_types(%a: tensor<8xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "whale.relu"(%a) : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_int(%a: tensor<8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float}}
  %0 = whale.exp %a : tensor<8xi32>
  return
}

// -----

func.func @mask_rank(%a: tensor<8xf32>) {
  // expected-error @+1 {{needs rank >= 2 (query and key positions)}}
  %0 = whale.causal_mask %a : tensor<8xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{converts elements, so the shapes must be equal; got 'tensor<8x16xf32>' to 'tensor<16x8xbf16>'}}
  %0 = whale.cast %x : tensor<8x16xf32> to tensor<16x8xbf16>
  return
}

// -----

func.func @cast_types(%x: tensor<8xf64>) {
  // expected-error @+1 {{converts between f32 and bf16; got 'f64' to 'bf16'}}
  %0 = whale.cast %x : tensor<8xf64> to tensor<8xbf16>
  return
}

// -----

func.func @cast_same(%x: tensor<8xf32>) {
  // expected-error @+1 {{converts between f32 and bf16; got 'f32' to 'f32'}}
  %0 = whale.cast %x : tensor<8xf32> to tensor<8xf32>
  return
}
