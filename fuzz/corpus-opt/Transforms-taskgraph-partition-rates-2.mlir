module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4, memory = 1500>]>} {
func.func @under_memory(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}
