func.func @hybrid(%x: tensor<8x16xf32>, %y: tensor<8xi32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate -> (tensor<8x16xf32>) {
    %a = whale.relu %x : tensor<8x16xf32>
    whale.yield %a : tensor<8x16xf32>
  }
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "head" normal [0.0, 2.0e-02] : tensor<16x4000xf32>
    %z = whale.matmul %h, %w : tensor<8x16xf32>, tensor<16x4000xf32> -> tensor<8x4000xf32>
    %c = whale.cross_entropy %z, %y : tensor<8x4000xf32>, tensor<8xi32> -> tensor<8xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
