func.func @emb_type(%t: tensor<256x64xf32>, %ids: tensor<4xi32>) {
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4xi32> -> tensor<4x64xbf16>
  return
}
