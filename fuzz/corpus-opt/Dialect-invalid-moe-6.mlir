func.func @dgates(%y: tensor<2x6x8xf32>, %h: tensor<4x6x8xf32>, %e: tensor<2x6x2xi32>) {
  %g = whale.moe_gate_grad %y, %h, %e : tensor<2x6x8xf32>, tensor<4x6x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x1xf32>
  return
}
