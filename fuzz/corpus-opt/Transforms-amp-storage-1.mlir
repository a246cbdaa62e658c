func.func @stages(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model} {
  %a = whale.taskgraph replicate -> (tensor<2x4xf32>) {
    %r = whale.relu %x : tensor<2x4xf32>
    whale.yield %r : tensor<2x4xf32>
  }
  %b = whale.taskgraph replicate -> (tensor<f32>) {
    %t = whale.tanh %a : tensor<2x4xf32>
    %s = whale.reduce_sum %t axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %s : tensor<f32>
  }
  return %b : tensor<f32>
}
func.func @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = whale.relu %x : tensor<2xf32>
  return %r : tensor<2xf32>
}
