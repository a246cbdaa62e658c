module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @no_grid(%x: tensor<4x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<4x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
