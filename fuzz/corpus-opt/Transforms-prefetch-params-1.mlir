// grad_sync = "after_backward": the gathers block where they stand.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.gather_params %
// CHECK-NOT: whale.gather_params_start
module attributes {whale.config = #whale.settings<shard_parameters = true, grad_sync = "after_backward">} {
  func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] {group = "replicas", owner = 0 : i64} : tensor<4x4xf32>
    %g0 = whale.gather_params %w0 from [0] over "replicas" : tensor<4x4xf32>
    %y0 = whale.matmul %x, %g0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %y0 : tensor<2x4xf32>
  }
}
