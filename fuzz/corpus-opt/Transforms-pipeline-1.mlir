func.func @accumulate(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 1 : i64, grid = array<i64: 0>, replicas = 1 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
