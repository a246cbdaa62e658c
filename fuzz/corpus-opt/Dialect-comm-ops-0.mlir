func.func @exchange(%h: tensor<8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<4xf32>) -> (tensor<8x16xi32>, tensor<16x4xf32>, tensor<4xf32>) {
  whale.send %h to stage 1 tag 3 : tensor<8x16xf32>
  %r = whale.recv from stage 1 tag 4 : tensor<8x16xi32>
  %s:2 = whale.all_reduce %a, %b over "replicas" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
  %c:2 = whale.clip_grad_norm %s#0, %s#1 max_norm = 1.0 over "stages" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
  return %r, %c#0, %c#1 : tensor<8x16xi32>, tensor<16x4xf32>, tensor<4xf32>
}

func.func @overlapped(%a: tensor<16x4xf32>, %b: tensor<4xf32>, %c: tensor<8xf32>) -> (tensor<16x4xf32>, tensor<4xf32>, tensor<8xf32>) {
  %p = whale.all_reduce_start %a, %b over "replicas" : tensor<16x4xf32>, tensor<4xf32>
  %q = whale.all_reduce_start %c over "shard_peers" {shards = 2 : i64} : tensor<8xf32>
  %s:2 = whale.all_reduce_wait %p : tensor<16x4xf32>, tensor<4xf32>
  %t = whale.all_reduce_wait %q : tensor<8xf32>
  return %s#0, %s#1, %t : tensor<16x4xf32>, tensor<4xf32>, tensor<8xf32>
}

func.func @owned(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.sgd_update %w, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, owner = 1 : i64, group = "shard_peers", shards = 2 : i64} : tensor<4xf32>
  %v = whale.param "v" zeros [] : tensor<2xf32>
  whale.broadcast %w, %v from [1, 0] over "shard_peers" {shards = 2 : i64} : tensor<4xf32>, tensor<2xf32>
  return
}
