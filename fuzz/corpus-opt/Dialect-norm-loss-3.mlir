func.func @attention_bf16(%q: tensor<2x8x3x4xbf16>, %k: tensor<2x8x3x4xbf16>, %d: tensor<2x8x3x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>) {
  %o = whale.attention %q, %k, %k scale = 0.5 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %d scale = 0.5 causal sequence_major : tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16> -> f32
  return %dq, %dv : tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>
}
