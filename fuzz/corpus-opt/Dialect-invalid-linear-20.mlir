func.func @round_and_sum_rounded_type(%dy: tensor<8x32xf32>) {
  %r, %s = whale.round_and_sum %dy : tensor<8x32xf32> -> tensor<8x32xf32>, tensor<32xf32>
  return
}
