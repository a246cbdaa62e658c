func.func @shares(%h: tensor<4x7x8xf32>, %e: tensor<2x6x2xi32>) {
  %y = whale.moe_combine %h, %e : tensor<4x7x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x8xf32>
  return
}
