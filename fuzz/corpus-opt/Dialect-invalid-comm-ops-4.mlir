func.func @stage(%a: tensor<4xf32>) {
  whale.send %a to stage -1 tag 0 : tensor<4xf32>
  return
}
