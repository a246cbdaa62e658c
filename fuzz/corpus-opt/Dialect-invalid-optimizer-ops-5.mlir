func.func @clip_norm(%g: tensor<4xf32>) {
  %c = whale.clip_grad_norm %g max_norm = 0.0 : tensor<4xf32> -> tensor<4xf32>
  return
}
