func.func @given(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}
