func.func @wait_types(%a: tensor<4xf32>) -> tensor<2xf32> {
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<2xf32>
  return %s : tensor<2xf32>
}
