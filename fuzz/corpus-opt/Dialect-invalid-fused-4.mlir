func.func @result_type(%x: tensor<4x4xf32>) {
  %r:2 = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x1xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    whale.fused_yield %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
  }
  return
}
