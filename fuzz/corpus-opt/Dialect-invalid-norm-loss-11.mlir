func.func @emb_ids(%t: tensor<256x64xf32>, %ids: tensor<4xf32>) {
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4xf32> -> tensor<4x64xf32>
  return
}
