func.func @broadcast_not_a_param(%a: tensor<4xf32>) {
  whale.broadcast %a from [0] over "replicas" : tensor<4xf32>
  return
}
