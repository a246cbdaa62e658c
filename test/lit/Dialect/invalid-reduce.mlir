// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @range(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.reduce_sum %x axes = [2] : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @order(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{axes must be sorted and distinct}}
  %0 = whale.reduce_mean %x axes = [1, 0] : tensor<8x16xf32> -> tensor<f32>
  return
}

// -----

func.func @result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result should have shape [8, 1] but has 'tensor<8xf32>'}}
  %0 = whale.reduce_max %x axes = [1] {keepdim} : tensor<8x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{input and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.reduce_sum %x axes = [1] : tensor<8x16xf32> -> tensor<8xf16>
  return
}
