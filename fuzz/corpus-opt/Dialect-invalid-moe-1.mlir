func.func @choices(%x: tensor<2x6x8xf32>, %e: tensor<2x6x3xi32>) {
  %d = whale.moe_dispatch %x, %e experts = 2 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x3xi32> -> tensor<2x6x8xf32>
  return
}
