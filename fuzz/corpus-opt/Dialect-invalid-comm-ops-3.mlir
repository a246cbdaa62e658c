func.func @clip_group(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = whale.clip_grad_norm %a max_norm = 1.0 over "pods" : tensor<4xf32> -> tensor<4xf32>
  return %c : tensor<4xf32>
}
