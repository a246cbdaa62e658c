func.func @elementwise(%x: tensor<8x4xf32>, %b: tensor<8x4xf32>, %v: tensor<4xf32>) {
  %0 = whale.add %x, %v : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %1 = whale.exp %x : tensor<8x4xf32>
  %2 = whale.gelu %x : tensor<8x4xf32>
  %3 = whale.relu %x : tensor<8x4xf32>
  return
}
