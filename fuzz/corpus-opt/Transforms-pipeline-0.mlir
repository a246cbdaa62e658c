func.func @two_stages(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, grid = array<i64: 0, 1>, replicas = 1 : i64, stages = 2 : i64}} {
  %h = whale.taskgraph replicate -> (tensor<16x4xf32>) attributes {stage = 0 : i64} {
    %a = whale.relu %x : tensor<16x4xf32>
    whale.yield %a : tensor<16x4xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 1 : i64} {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
