// RUN: whale-opt %s --split-input-file --verify-diagnostics

func.func @group(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{group must be "replicas", "stages", "shard_peers" or "hsdp", not "world"}}
  %s = whale.all_reduce %a over "world" : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// A sharding group sums only to owners (then over the owners' copies).
func.func @hsdp_plain(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{sums over a sharding group ("hsdp") only to owners}}
  %s = whale.all_reduce %a over "hsdp" : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @types(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{results must have the types of the operands}}
  %s = whale.all_reduce %a over "replicas" : tensor<4xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

func.func @clip_group(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{group must be "replicas" or "stages", not "pods"}}
  %c = whale.clip_grad_norm %a max_norm = 1.0 over "pods" : tensor<4xf32> -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @stage(%a: tensor<4xf32>) {
  // expected-error@+1 {{attribute 'stage' failed to satisfy constraint}}
  whale.send %a to stage -1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @start_group(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{group must be "replicas", "stages", "shard_peers" or "hsdp", not "world"}}
  %p = whale.all_reduce_start %a over "world" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @start_peers_without_shards(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{takes shards exactly when its group is "shard_peers"}}
  %p = whale.all_reduce_start %a over "shard_peers" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @start_never_waited(%a: tensor<4xf32>) {
  // expected-error@+1 {{must be ended by exactly one whale.all_reduce_wait}}
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  return
}

// -----

func.func @start_waited_twice(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error@+1 {{must be ended by exactly one whale.all_reduce_wait}}
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  %t = whale.all_reduce_wait %p : tensor<4xf32>
  return %s, %t : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @wait_types(%a: tensor<4xf32>) -> tensor<2xf32> {
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  // expected-error@+1 {{results must have the types of the tensors its whale.all_reduce_start sums}}
  %s = whale.all_reduce_wait %p : tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

func.func @wait_argument(%p: !whale.pending) -> tensor<4xf32> {
  // expected-error@+1 {{waits for a value no whale.all_reduce_start made}}
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @broadcast_not_a_param(%a: tensor<4xf32>) {
  // expected-error@+1 {{hands on parameters: its operands must come from whale.param}}
  whale.broadcast %a from [0] over "replicas" : tensor<4xf32>
  return
}

// -----

func.func @broadcast_peers_without_shards() {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error@+1 {{takes shards exactly when its group is "shard_peers"}}
  whale.broadcast %w from [1] over "shard_peers" : tensor<4xf32>
  return
}

// -----

func.func @wait_before_start(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{must follow its whale.all_reduce_start in its block}}
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  %p = whale.all_reduce_start %a over "replicas" : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @owners_count(%a: tensor<4xf32>, %b: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{has 1 owners for 2 operands: it needs one per operand}}
  %r:2 = whale.all_reduce %a, %b over "replicas" {owners = array<i64: 0>} : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return %r#0 : tensor<4xf32>
}

// -----

func.func @owners_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{owners are positions in the group, so none may be negative}}
  %p = whale.all_reduce_start %a over "replicas" {owners = array<i64: -1>} : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @broadcast_owners(%a: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  %v = whale.param "v" zeros [] : tensor<2xf32>
  // expected-error@+1 {{has 1 owners for 2 parameters: it needs one per parameter}}
  whale.broadcast %w, %v from [1] over "replicas" : tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @broadcast_negative_owner(%a: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error@+1 {{owners must be positions in its group, not -1}}
  whale.broadcast %w from [-1] over "replicas" : tensor<4xf32>
  return
}
