func.func @m(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[]], global_batch = 8 : i64, grad_weight = 2.500000e-01 : f64, grid = array<i64: 0>, micro_batch = 2 : i64, micro_batches = 4 : i64, replicas = 1 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0>, stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
