func.func @attention_widths(%q: tensor<8x4xf32>, %k: tensor<8x5xf32>) -> tensor<8x4xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<8x4xf32>, tensor<8x5xf32>
  return %o : tensor<8x4xf32>
}
