module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13, gpu = true>, #whale.device<flops = 1.0e13, gpu = true>]>} {
func.func @rate_only_gpus(%x: tensor<2048x128xf32>, %w: tensor<128x2048xf32>) -> tensor<2048x2048xf32> attributes {whale.model} {
  %p = whale.matmul %x, %w : tensor<2048x128xf32>, tensor<128x2048xf32> -> tensor<2048x2048xf32>
  %a = whale.relu %p : tensor<2048x2048xf32>
  %b = whale.relu %a : tensor<2048x2048xf32>
  %c = whale.relu %b : tensor<2048x2048xf32>
  %d = whale.relu %c : tensor<2048x2048xf32>
  %e = whale.relu %d : tensor<2048x2048xf32>
  %f = whale.relu %e : tensor<2048x2048xf32>
  %g = whale.relu %f : tensor<2048x2048xf32>
  %h = whale.relu %g : tensor<2048x2048xf32>
  %i = whale.relu %h : tensor<2048x2048xf32>
  %j = whale.relu %i : tensor<2048x2048xf32>
  return %j : tensor<2048x2048xf32>
}
}
