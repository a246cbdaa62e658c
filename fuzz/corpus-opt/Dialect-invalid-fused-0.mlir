func.func @not_elementwise(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 0 : tensor<4x4xf32>
    whale.fused_yield %s : tensor<4x4xf32>
  }
  return
}
