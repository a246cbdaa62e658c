func.func @buckets(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 16 : i64, micro_batch = 2 : i64, micro_batches = 2 : i64, replicas = 4 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %a = whale.param "m/a" zeros [] : tensor<4xf32>
    %b = whale.param "m/b" zeros [] : tensor<4xf32>
    %c = whale.param "m/c" zeros [] : tensor<4x8xf32>
    %s = whale.add %x, %a : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %t = whale.add %s, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %u = whale.matmul %t, %c : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %m = whale.reduce_mean %u axes = [0, 1] : tensor<2x8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
