func.func @emb_rank(%ids: tensor<2xi32>, %d: tensor<2x4xf32>) {
  %0 = whale.embedding_grad %ids, %d : tensor<2xi32>, tensor<2x4xf32> -> tensor<40xf32>
  return
}
