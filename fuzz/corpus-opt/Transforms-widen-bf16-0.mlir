func.func @through_reshapes(%a: tensor<4x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<2x2x8xf32> {
  %m = whale.matmul %a, %b : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %r = whale.reshape %m : tensor<4x8xbf16> -> tensor<2x16xbf16>
  %s = whale.reshape %r : tensor<2x16xbf16> -> tensor<2x2x8xbf16>
  %t = whale.tanh %s : tensor<2x2x8xbf16>
  %w = whale.cast %t : tensor<2x2x8xbf16> to tensor<2x2x8xf32>
  return %w : tensor<2x2x8xf32>
}
