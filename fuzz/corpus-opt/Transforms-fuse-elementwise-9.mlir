func.func @in_taskgraph(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = whale.taskgraph replicate -> (tensor<4x4xf32>) {
    %n = whale.neg %x : tensor<4x4xf32>
    %e = whale.exp %n : tensor<4x4xf32>
    whale.yield %e : tensor<4x4xf32>
  }
  return %t : tensor<4x4xf32>
}
