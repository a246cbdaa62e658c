func.func @row_op_of_a_row(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r:2 = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    %p = whale.softmax %c axis = -1 : tensor<4xf32>
    whale.fused_yield %a, %p : tensor<4x4xf32>, tensor<4xf32>
  }
  return
}
