func.func @wait_before_start(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  return %s : tensor<4xf32>
}
