func.func @mask_rank(%d: tensor<4xf32>) {
  %0 = whale.causal_mask_grad %d : tensor<4xf32>
  return
}
