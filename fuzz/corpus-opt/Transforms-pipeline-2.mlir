func.func @too_many(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 8 : i64, grid = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>, replicas = 8 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
