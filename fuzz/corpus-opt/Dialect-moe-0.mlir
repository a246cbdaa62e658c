func.func @moe(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi32>, %g: tensor<2x6x2xf32>) -> (tensor<4x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x2xf32>, tensor<2x6x2x4xf32>) {
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x2xi32> -> tensor<4x6x8xf32>
  %w = whale.moe_dispatch %x, %e, %g experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x2xi32>, tensor<2x6x2xf32> -> tensor<4x6x8xf32>
  %y = whale.moe_combine %d, %e, %g : tensor<4x6x8xf32>, tensor<2x6x2xi32>, tensor<2x6x2xf32> -> tensor<2x6x8xf32>
  %u = whale.moe_combine %w, %e : tensor<4x6x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x8xf32>
  %dg = whale.moe_gate_grad %y, %d, %e : tensor<2x6x8xf32>, tensor<4x6x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x2xf32>
  %h = whale.one_hot %e classes = 4 : tensor<2x6x2xi32> -> tensor<2x6x2x4xf32>
  return %w, %y, %u, %dg, %h : tensor<4x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x2xf32>, tensor<2x6x2x4xf32>
}
