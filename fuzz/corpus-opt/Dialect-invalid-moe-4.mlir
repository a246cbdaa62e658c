func.func @gates(%h: tensor<4x6x8xf32>, %e: tensor<2x6x2xi32>, %g: tensor<2x6x1xf32>) {
  %y = whale.moe_combine %h, %e, %g : tensor<4x6x8xf32>, tensor<2x6x2xi32>, tensor<2x6x1xf32> -> tensor<2x6x8xf32>
  return
}
