func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  %unused = whale.exp %x : tensor<4xf32>
  %r = whale.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}
