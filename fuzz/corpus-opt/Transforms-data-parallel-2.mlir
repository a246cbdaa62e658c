func.func @stage_past_stages(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 1 : i64} {
    %a = whale.param "m/a" zeros [] : tensor<4xf32>
    %s = whale.add %x, %a : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %m = whale.reduce_mean %s axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
