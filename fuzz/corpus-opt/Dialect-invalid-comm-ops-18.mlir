func.func @broadcast_negative_owner(%a: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.broadcast %w from [-1] over "replicas" : tensor<4xf32>
  return
}
