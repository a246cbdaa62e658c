module attributes {whale.config = #whale.settings<auto_parallel = true, num_task_graph = 2, task_graph_split = 4>} {
func.func @from_config(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
}
