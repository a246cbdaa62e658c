func.func @sum_loss(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_sum %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
