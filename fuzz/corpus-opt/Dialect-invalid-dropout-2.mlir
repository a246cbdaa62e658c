func.func @offset(%x: tensor<8x16xf32>) {
  %a = whale.dropout %x rate = 0.5 key = 1 {row_offset = -2} : tensor<8x16xf32>
  return
}
