func.func @unknown_op(%x: tensor<4xf32>) {
  %0 = whale.formula_grad "whale.swish" %x, %x, %x : tensor<4xf32>
  return
}
