module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 300>, #whale.device<flops = 1.0e4, memory = 300>]>} {
func.func @cannot_fit(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
}
