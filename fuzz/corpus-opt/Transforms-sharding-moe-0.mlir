func.func @experts(%x: tensor<2x4x8xf32>, %e: tensor<2x4x2xi32>, %g: tensor<2x4x2xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %s = whale.moe_dispatch %x, %e experts = 4 capacity = 2 : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<4x4x8xf32>
    %w = whale.param "experts" normal [0.0, 2.0e-02] : tensor<4x8x8xf32>
    %h = whale.matmul %s, %w : tensor<4x4x8xf32>, tensor<4x8x8xf32> -> tensor<4x4x8xf32>
    %y = whale.moe_combine %h, %e, %g : tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x4x2xf32> -> tensor<2x4x8xf32>
    %m = whale.reduce_mean %y axes = [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
