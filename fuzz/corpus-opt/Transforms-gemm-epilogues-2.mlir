func.func @inference(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %h = whale.gelu %y : tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}
