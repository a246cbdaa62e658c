func.func @clip_types(%g: tensor<4xf32>) {
  %c = whale.clip_grad_norm %g max_norm = 1.0 : tensor<4xf32> -> tensor<5xf32>
  return
}
