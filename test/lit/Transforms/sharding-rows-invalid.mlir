// RUN: whale-opt %s --verify-diagnostics --whale-sharding

// Rows are recognized by the micro-batch: a model elaborated at other rows
// (128 against a plan whose ranks compute micro-batches of 32, and their
// shard group of 2 ranks 64) was cut wrong, into an op
// the verifier refused (issue 92 item 6). It is refused, named.
module {
// expected-error@+1 {{is elaborated at 128 rows, but a rank of its plan computes 32 rows a micro-batch and its shard group 64: the model is sharded from one elaborated at either, as whale plan elaborates it}}
func.func @other_rows(%x: tensor<128x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 2>, stages = 1 : i64}} {
  %l = whale.taskgraph split -> (tensor<f32>) attributes {shards = 2 : i64, stage = 0 : i64, schedule = #whale.schedule<F0 B0>, virtual_device = array<i64: 0, 1>} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<128x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
