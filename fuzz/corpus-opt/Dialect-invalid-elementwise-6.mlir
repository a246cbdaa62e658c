func.func @mask_rank(%a: tensor<8xf32>) {
  %0 = whale.causal_mask %a : tensor<8xf32>
  return
}
