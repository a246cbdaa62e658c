// RUN: whale-opt %s --split-input-file --verify-diagnostics

func.func @rate(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{rate must be in [0, 1), got 1.0}}
  %a = whale.dropout %x rate = 1.0 key = 1 : tensor<8x16xf32>
  return
}

// -----

func.func @rows(%x: tensor<f32>) {
  // expected-error @+1 {{needs the batch's rows in dimension 0}}
  %a = whale.dropout %x rate = 0.5 key = 1 : tensor<f32>
  return
}

// -----

func.func @offset(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{row_offset must be >= 0}}
  %a = whale.dropout %x rate = 0.5 key = 1 {row_offset = -2} : tensor<8x16xf32>
  return
}
