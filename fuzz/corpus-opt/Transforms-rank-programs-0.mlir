module attributes {whale.config = #whale.settings<num_micro_batch = 2>} {
  func.func @m(%arg0: tensor<2x4xf32>, %arg1: tensor<2xi32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[["m/w0"]], [["m/w1"]]], devices = 4 : i64, global_batch = 8 : i64, grad_weight = 2.500000e-01 : f64, grid = array<i64: 0, 2, 1, 3>, micro_batch = 2 : i64, micro_batches = 2 : i64, replicas = 2 : i64, schedule = "1f1b", stages = 2 : i64}, whale.train = {clip_grad_norm = 1.000000e+00 : f64, data = {batch = 8 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
    %0 = whale.taskgraph replicate -> (tensor<2x8xf32>) attributes {schedule = #whale.schedule<F0 F1 B0 B1>, stage = 0 : i64, virtual_device = array<i64: 0, 2>} {
      %2 = whale.param "m/w0" normal [0.000000e+00, 1.000000e-01] : tensor<4x8xf32>
      %3 = whale.matmul %arg0, %2 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
      %4 = whale.relu %3 : tensor<2x8xf32>
      whale.yield %4 : tensor<2x8xf32>
    }
    %1 = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0 F1 B1>, stage = 1 : i64, virtual_device = array<i64: 1, 3>} {
      %2 = whale.param "m/w1" normal [0.000000e+00, 1.000000e-01] : tensor<8x3xf32>
      %3 = whale.matmul %0, %2 : tensor<2x8xf32>, tensor<8x3xf32> -> tensor<2x3xf32>
      %4 = whale.cross_entropy %3, %arg1 : tensor<2x3xf32>, tensor<2xi32> -> tensor<2xf32>
      %5 = whale.reduce_mean %4 axes = [0] : tensor<2xf32> -> tensor<f32>
      whale.yield %5 : tensor<f32>
    }
    return %1 : tensor<f32>
  }
}
