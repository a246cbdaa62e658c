func.func @f64(%x: tensor<4xf64>) {
  %r = whale.fused(%x) : (tensor<4xf64>) -> (tensor<4xf64>) {
  ^bb0(%a: tensor<4xf64>):
    whale.fused_yield %a : tensor<4xf64>
  }
  return
}
