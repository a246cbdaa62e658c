// Given shard weights are checked: one per rank of a group, the program's
// own among them, and local batches in their proportion. (Each case needs
// its own pass options, hence a RUN line each.)
// RUN: not whale-opt %s --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=32 '--whale-balance=local-batches=24,8 shard-weights=3,1,1' 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not whale-opt %s --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=32 '--whale-balance=local-batches=24,8 shard-weights=3,1 shard-weight=2' 2>&1 | FileCheck %s --check-prefix=OWN
// RUN: not whale-opt %s --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=32 '--whale-balance=local-batches=16,16 shard-weights=3,1 shard-weight=1' 2>&1 | FileCheck %s --check-prefix=SHARES

// COUNT: [[@LINE+3]]:1: error: 'func.func' op shard-weights must be 2 positive numbers, one per rank of a shard group
// OWN: [[@LINE+2]]:1: error: 'func.func' op shard-weight 2 is none of the shard-weights
// SHARES: [[@LINE+1]]:1: error: 'func.func' op local-batches must be positive multiples of 1, within each shard group of 2 in the proportion of its weights
func.func @mlp(%x: tensor<16x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w : tensor<16x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<16x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
