func.func @slots(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi32>) {
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x2xi32> -> tensor<4x5x8xf32>
  return
}
