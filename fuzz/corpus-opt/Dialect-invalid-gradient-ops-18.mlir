func.func @emb_type(%ids: tensor<2xi32>, %d: tensor<2x4xf16>) {
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<2x4xf16> -> tensor<10x4xf32>
  return
}
