func.func @losses(%x: tensor<8x4xf32>, %g: tensor<4xf32>, %y: tensor<8xi32>) {
  %0 = whale.softmax %x axis = -1 : tensor<8x4xf32>
  %1 = whale.layernorm %x, %g, %g eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  %2 = whale.cross_entropy %x, %y : tensor<8x4xf32>, tensor<8xi32> -> tensor<8xf32>
  %3 = whale.reduce_mean %2 axes = [0] : tensor<8xf32> -> tensor<f32>
  return
}
