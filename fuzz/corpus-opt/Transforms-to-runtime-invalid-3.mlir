func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  %y = func.call @m(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
