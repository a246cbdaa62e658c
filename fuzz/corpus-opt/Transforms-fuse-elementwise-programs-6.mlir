func.func @sums_over_different_dimensions(%x: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  %q = whale.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %c = whale.reduce_sum %q axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %r = whale.reduce_sum %q axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %c, %r : tensor<8xf32>, tensor<4xf32>
}
