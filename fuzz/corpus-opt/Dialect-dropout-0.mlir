func.func @dropout(%x: tensor<8x16xf32>, %y: tensor<8x4x4xf32>) -> (tensor<8x16xf32>, tensor<8x4x4xf32>) {
  %a = whale.dropout %x rate = 0.1 key = 42 : tensor<8x16xf32>
  %b = whale.dropout %y rate = 0.5 key = -7 {row_offset = 8} : tensor<8x4x4xf32>
  return %a, %b : tensor<8x16xf32>, tensor<8x4x4xf32>
}
