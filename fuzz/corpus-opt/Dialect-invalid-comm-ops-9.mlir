func.func @start_waited_twice(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  %t = whale.all_reduce_wait %p : tensor<4xf32>
  return %s, %t : tensor<4xf32>, tensor<4xf32>
}
