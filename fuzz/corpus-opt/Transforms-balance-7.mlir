module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @too_small(%x: tensor<2x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 3 : i64, global_batch = 2 : i64, grid = array<i64: 0, 1, 2>, micro_batch = 1 : i64, micro_batches = 1 : i64, replicas = 3 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1, 2>} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
