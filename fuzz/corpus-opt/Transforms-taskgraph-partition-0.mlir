func.func @loose(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.1] : tensor<4x8xf32>
  %h = whale.matmul %x, %w : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r = whale.taskgraph replicate(2) -> (tensor<8x8xf32>) {
    %a = whale.relu %h : tensor<8x8xf32>
    whale.yield %a : tensor<8x8xf32>
  }
  %l = whale.reduce_mean %r axes = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

func.func @shared_user(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %g = whale.param "m/g" ones [] : tensor<4xf32>
  %b = whale.param "m/b" zeros [] : tensor<4xf32>
  %r = whale.relu %x : tensor<8x4xf32>
  %n = whale.layernorm %r, %g, %b eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  %l = whale.reduce_mean %n axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
