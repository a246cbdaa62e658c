func.func @groups(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
