func.func @group(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = whale.all_reduce %a over "world" : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
