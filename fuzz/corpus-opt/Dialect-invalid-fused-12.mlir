func.func @row_op_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    %n = whale.neg %s : tensor<4x4xf32>
    whale.fused_yield %n : tensor<4x4xf32>
  }
  return
}
