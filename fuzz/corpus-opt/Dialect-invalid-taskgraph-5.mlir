func.func @yield_outside(%x: tensor<4xf32>) {
  whale.yield %x : tensor<4xf32>
}
