func.func @row_op_middle_broadcast(%x: tensor<2x4x4xf32>, %c: tensor<2x1x4xf32>) {
  %r = whale.fused(%x, %c) : (tensor<2x4x4xf32>, tensor<2x1x4xf32>) -> (tensor<2x4x4xf32>) {
  ^bb0(%a: tensor<2x4x4xf32>, %b: tensor<2x1x4xf32>):
    %s = whale.add %a, %b : tensor<2x4x4xf32>, tensor<2x1x4xf32> -> tensor<2x4x4xf32>
    %p = whale.softmax %s axis = 2 : tensor<2x4x4xf32>
    whale.fused_yield %p : tensor<2x4x4xf32>
  }
  return
}
