// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @rank(%a: tensor<16xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+1 {{operands need rank >= 2, got 1 and 2}}
  %0 = whale.matmul %a, %b : tensor<16xf32>, tensor<16x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @element_types(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'bf16'}}
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xbf16> -> tensor<8x4xf32>
  return
}

// -----

func.func @contracting(%a: tensor<8x16xf32>, %b: tensor<15x4xf32>) {
  // expected-error @+1 {{contracting dimensions differ: 16 vs 15}}
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<15x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @batch(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) {
  // expected-error @+1 {{batch dimensions of the operands differ}}
  %0 = whale.matmul %a, %b : tensor<2x8x16xf32>, tensor<3x16x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @result(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+1 {{result should have shape [8, 4] but has 'tensor<4x8xf32>'}}
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @result_type(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+1 {{result element type 'f16' must be the operands' ('f32')}}
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf16>
  return
}

// -----

// A bf16 product may keep its fp32 accumulation (amp's storage), but an fp32
// product is never rounded to bf16 by the matmul itself.
func.func @f32_to_bf16(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  // expected-error @+1 {{result element type 'bf16' must be the operands' ('f32')}}
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xbf16>
  return
}

// -----

func.func @bf16_to_f16(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>) {
  // expected-error @+1 {{result element type 'f16' must be the operands' ('bf16') or f32}}
  %0 = whale.matmul %a, %b : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xf16>
  return
}

// -----

func.func @integers(%a: tensor<8x16xi32>, %b: tensor<16x4xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float}}
  %0 = whale.matmul %a, %b : tensor<8x16xi32>, tensor<16x4xi32> -> tensor<8x4xi32>
  return
}
