func.func @emb_dout(%ids: tensor<2xi32>, %d: tensor<3x4xf32>) {
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<3x4xf32> -> tensor<10x4xf32>
  return
}
