func.func @round_and_sum_rounded_shape(%dy: tensor<8x32xf32>) {
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<4x32xbf16>, tensor<32xf32>
  return
}
