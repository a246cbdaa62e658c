func.func @broadcast_owners(%a: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  %v = whale.param "v" zeros [] : tensor<2xf32>
  whale.broadcast %w, %v from [1] over "replicas" : tensor<4xf32>, tensor<2xf32>
  return
}
