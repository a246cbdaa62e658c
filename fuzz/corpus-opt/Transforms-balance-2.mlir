module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 8300>, #whale.device<flops = 1.0e4, memory = 8300>]>} {
func.func @cannot_fit(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1>} {
    %w = whale.param "m/w" zeros [] : tensor<16x16xf32>
    %h = whale.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %r = whale.relu %h : tensor<64x16xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<64x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
