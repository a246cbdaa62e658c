// A bucket whose gradient is not a running sum of the micro-batches' (a
// gradient the micro-batches do not add up) stays as it is.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.all_reduce %{{.*}} over "replicas" {owners = array<i64: 0>}
// CHECK-NOT: whale.add_into_owners
module attributes {whale.config = #whale.settings<shard_gradients = true, num_micro_batch = 2>} {
  func.func @m_stage0(%g: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64, micro_batches = 2 : i64}} {
    %b = whale.param "m/b" zeros [] : tensor<4xf32>
    %r = whale.all_reduce %g over "replicas" {owners = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
    whale.sgd_update %b, %r {group = "replicas", owner = 0 : i64, lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
