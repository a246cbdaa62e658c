module attributes {whale.config = #whale.settings<auto_parallel = true, num_task_graph = 3>} {
  func.func @small(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.relu %x : tensor<8x4xf32>
    %l = whale.reduce_mean %a axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
