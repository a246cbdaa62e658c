func.func @round_and_sum(%dy: tensor<4x16xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) attributes {whale.model} {
  %r, %db = whale.round_and_sum %dy : tensor<4x16xf32> -> tensor<4x16xbf16>, tensor<16xf32>
  return %r, %db : tensor<4x16xbf16>, tensor<16xf32>
}
