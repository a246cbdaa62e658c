func.func @router(%x: tensor<2x4x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %p = whale.softmax %x axis = 2 : tensor<2x4x4xf32>
    %i = whale.topk %p k = 1 indices : tensor<2x4x4xf32> -> tensor<2x4x1xi32>
    %h = whale.one_hot %i classes = 4 : tensor<2x4x1xi32> -> tensor<2x4x1x4xf32>
    %m = whale.reduce_mean %h axes = [0, 1, 2, 3] : tensor<2x4x1x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
