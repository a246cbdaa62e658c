func.func @yield_types(%x: tensor<4xf32>) {
  %r = whale.taskgraph replicate -> (tensor<8xf32>) {
    whale.yield %x : tensor<4xf32>
  }
  return
}
