func.func @shapes(%x: tensor<8x16xf32>) {
  %0 = whale.reshape %x : tensor<8x16xf32> -> tensor<8x4x4xf32>
  %1 = whale.transpose %0 permutation = [0, 2, 1] : tensor<8x4x4xf32> -> tensor<8x4x4xf32>
  %2 = whale.slice %x axis = 1, start = 4, end = 12 : tensor<8x16xf32> -> tensor<8x8xf32>
  %3 = whale.concat %x, %2 axis = 1 : tensor<8x16xf32>, tensor<8x8xf32> -> tensor<8x24xf32>
  return
}

func.func @ids(%t: tensor<4x8xi32>) {
  %0 = whale.reshape %t : tensor<4x8xi32> -> tensor<32xi32>
  return
}
