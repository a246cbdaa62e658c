func.func @attention_grad_f16_gradients(%q: tensor<8x4xbf16>, %d: tensor<8x4xf16>) {
  %dq, %dk, %dv = whale.attention_grad %q, %q, %q, %q, %d scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xbf16> -> f16
  return
}
