func.func @mlp(%x: tensor<4x8xf32>, %t: tensor<4xi32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 0.02] : tensor<8x8xf32>
    %g = whale.param "g" ones [] : tensor<8xf32>
    %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n = whale.layernorm %h, %g, %g eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %a = whale.gelu %n : tensor<4x8xf32>
    %y = whale.matmul %a, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %half = whale.constant 0.5 : tensor<f32>
    %s = whale.mul %y, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %c = whale.cross_entropy %s, %t : tensor<4x8xf32>, tensor<4xi32> -> tensor<4xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
