module {
func.func @bad_weights(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 32 : i64, grid = array<i64: 0, 1>, micro_batch = 8 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shard_weight = 1 : i64, shard_weights = array<i64: 2, 1, 1>, shards = array<i64: 2>, stages = 1 : i64}} {
  %l = whale.taskgraph split -> (tensor<f32>) attributes {shards = 2 : i64, stage = 0 : i64, schedule = #whale.schedule<F0 B0>, virtual_device = array<i64: 0, 1>} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
