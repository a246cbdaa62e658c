func.func @unplanned(%x: tensor<16x4xf32>) -> tensor<16x4xf32> attributes {whale.model} {
  return %x : tensor<16x4xf32>
}
