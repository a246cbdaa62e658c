func.func @silu(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = whale.silu %x : tensor<4x8xf32>
  %dx = whale.formula_grad "whale.silu" %x, %y, %dy : tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}
