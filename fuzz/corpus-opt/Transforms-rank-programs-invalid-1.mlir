func.func @half(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
