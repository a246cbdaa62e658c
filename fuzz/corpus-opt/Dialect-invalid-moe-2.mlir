func.func @routes(%x: tensor<2x6x8xf32>, %e: tensor<2x5x2xi32>) {
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x5x2xi32> -> tensor<4x6x8xf32>
  return
}
