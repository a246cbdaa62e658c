func.func @integers(%x: tensor<4xi32>) {
  %0 = whale.silu %x : tensor<4xi32>
  return
}
