func.func @attention_mixed_types(%q: tensor<8x4xbf16>, %k: tensor<8x4xf32>) -> tensor<8x4xbf16> {
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<8x4xbf16>, tensor<8x4xf32>
  return %o : tensor<8x4xbf16>
}
