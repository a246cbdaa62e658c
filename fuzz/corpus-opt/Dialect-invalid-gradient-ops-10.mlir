func.func @unary_kind(%x: tensor<4xf32>) {
  %0 = whale.unary_grad swish %x, %x, %x : tensor<4xf32>
  return
}
