func.func @rows(%x: tensor<f32>) {
  %a = whale.dropout %x rate = 0.5 key = 1 : tensor<f32>
  return
}
