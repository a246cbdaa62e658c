func.func @replicated(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = whale.taskgraph replicate(4) -> (tensor<8x16xf32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<16x16xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    whale.yield %y : tensor<8x16xf32>
  }
  return %h : tensor<8x16xf32>
}

func.func @split_all(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %a, %b = whale.taskgraph split -> (tensor<8x32xf32>, tensor<32xf32>) {
    %w = whale.param "m/head/w" xavier [1.0] : tensor<16x32xf32>
    %bias = whale.param "m/head/b" zeros [] : tensor<32xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %y, %bias : tensor<8x32xf32>, tensor<32xf32>
  }
  return %a : tensor<8x32xf32>
}

func.func @no_results() {
  whale.taskgraph replicate(2) {
    %p = whale.param "m/unused" ones [] : tensor<4xf32>
    whale.yield
  }
  return
}

func.func @initializers() {
  %0 = whale.param "p/zeros" zeros [] : tensor<4xf32>
  %1 = whale.param "p/ones" ones [] : tensor<4xf32>
  %2 = whale.param "p/normal" normal [1.0, 0.5] : tensor<4x4xf32>
  %3 = whale.param "p/uniform" uniform [-0.1, 0.1] : tensor<4x4xf32>
  %4 = whale.param "p/xavier" xavier [2.0] : tensor<4x4xf32>
  %5 = whale.param "p/bf16" zeros [] : tensor<4xbf16>
  return
}
