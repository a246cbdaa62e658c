// Without shard_parameters the pass leaves stage 1 as it is.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.param "m/l0/w" zeros [] : tensor<4x4xf32>
// CHECK-NOT: whale.gather_params
// CHECK: whale.broadcast
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%x: tensor<2x4xf32>, %g: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] : tensor<4x4xf32>
    %y = whale.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %r = whale.all_reduce %g over "replicas" : tensor<4x4xf32> -> tensor<4x4xf32>
    whale.sgd_update %w0, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    return %y : tensor<2x4xf32>
  }
}
