func.func @centered(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = whale.exp %x : tensor<8x4xf32>
  %m = whale.reduce_mean %e axes = [1] {keepdim} : tensor<8x4xf32> -> tensor<8x1xf32>
  %c = whale.sub %e, %m : tensor<8x4xf32>, tensor<8x1xf32> -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}
