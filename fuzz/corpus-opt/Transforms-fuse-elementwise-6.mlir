func.func @mean_squared_error(%y: tensor<8x4xf32>, %t: tensor<8x4xf32>) -> tensor<f32> {
  %d = whale.sub %y, %t : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %q = whale.mul %d, %d : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %m = whale.reduce_mean %q axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
  return %m : tensor<f32>
}
