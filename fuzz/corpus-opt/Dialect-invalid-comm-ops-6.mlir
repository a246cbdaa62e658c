func.func @start_in_place(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s, %a : tensor<4xf32>, tensor<4xf32>
}
