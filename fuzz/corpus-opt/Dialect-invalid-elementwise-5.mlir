func.func @unary_int(%a: tensor<8xi32>) {
  %0 = whale.exp %a : tensor<8xi32>
  return
}
