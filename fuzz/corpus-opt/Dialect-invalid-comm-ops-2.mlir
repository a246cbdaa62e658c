func.func @types(%a: tensor<4xf32>) -> tensor<2xf32> {
  %s = whale.all_reduce %a over "replicas" : tensor<4xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}
