func.func @not_a_formula(%x: tensor<4xf32>) {
  %0 = whale.formula_grad "whale.gelu" %x, %x, %x : tensor<4xf32>
  return
}
