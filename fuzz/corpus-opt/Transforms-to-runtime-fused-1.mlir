func.func @bias_gradient(%h: tensor<2x16x8xf32>, %b: tensor<8xf32>, %dy: tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<8xf32>) attributes {whale.model} {
  %r:2 = whale.fused(%h, %b, %dy) : (tensor<2x16x8xf32>, tensor<8xf32>, tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<8xf32>) {
  ^bb0(%x: tensor<2x16x8xf32>, %c: tensor<8xf32>, %g: tensor<2x16x8xf32>):
    %y = whale.gelu %x : tensor<2x16x8xf32>
    %d = whale.unary_grad gelu %x, %y, %g : tensor<2x16x8xf32>
    %s = whale.binary_grad add %x, %c, %d operand = 1 : tensor<2x16x8xf32>, tensor<8xf32>, tensor<2x16x8xf32> -> tensor<8xf32>
    whale.fused_yield %d, %s : tensor<2x16x8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<2x16x8xf32>, tensor<8xf32>
}
