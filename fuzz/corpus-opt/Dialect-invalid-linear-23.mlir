func.func @round_and_sum_columns(%dy: tensor<8x32xf32>) {
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xbf16>, tensor<8xf32>
  return
}
