func.func @split(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  %k = whale.taskgraph split(2) -> (tensor<f32>) {
    whale.yield %l : tensor<f32>
  }
  return %k : tensor<f32>
}
