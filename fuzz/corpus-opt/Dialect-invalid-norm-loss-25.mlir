func.func @attention_grad_mixed_operands(%q: tensor<8x4xbf16>, %k: tensor<8x4xf32>, %d: tensor<8x4xf32>) {
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %d scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xf32> -> f32
  return
}
