func.func @model(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = whale.taskgraph replicate(2) -> (tensor<8x16xf32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<16x16xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    whale.yield %y : tensor<8x16xf32>
  }
  %r = whale.relu %h : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
