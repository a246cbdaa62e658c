func.func @vector(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  return %x : tensor<4xf32>
}
