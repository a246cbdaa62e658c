func.func @clip_in_place(%g: tensor<4xf32>) -> tensor<4xf32> {
  %c = whale.clip_grad_norm %g max_norm = 1.0 : tensor<4xf32> -> tensor<4xf32>
  return %g : tensor<4xf32>
}
