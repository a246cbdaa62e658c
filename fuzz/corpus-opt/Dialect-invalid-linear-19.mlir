func.func @round_and_sum_bf16_input(%dy: tensor<8x32xbf16>) {
  %r, %s = whale.round_and_sum %dy : tensor<8x32xbf16> -> tensor<8x32xbf16>, tensor<32xf32>
  return
}
