func.func @emb_table(%t: tensor<256xf32>, %ids: tensor<4xi32>) {
  %0 = whale.embedding %t[%ids] : tensor<256xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}
