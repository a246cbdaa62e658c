func.func @attention(%q: tensor<2x8x4xbf16>, %k: tensor<2x8x4xbf16>, %v: tensor<2x8x4xbf16>, %d: tensor<2x8x4xbf16>) -> (tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) {
  %o = whale.attention %q, %k, %v scale = 0.125 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %v, %o, %d scale = 0.125 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
  return %o, %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
}
