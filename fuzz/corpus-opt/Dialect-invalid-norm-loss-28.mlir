func.func @attention_grad_gradient_type(%q: tensor<8x4xbf16>) {
  %dq, %dk, %dv = whale.attention_grad %q, %q, %q, %q, %q scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xbf16> -> tensor<4xf32>
  return
}
