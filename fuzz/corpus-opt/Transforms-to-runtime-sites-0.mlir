func.func @r(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<8x8xf32>
  %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = whale.reduce_mean %h axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}
