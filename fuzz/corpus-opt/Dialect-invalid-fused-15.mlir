func.func @row_op_and_sum(%x: tensor<4x4xf32>) {
  %r:2 = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    %m = whale.reduce_sum %a axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
    whale.fused_yield %s, %m : tensor<4x4xf32>, tensor<4xf32>
  }
  return
}
