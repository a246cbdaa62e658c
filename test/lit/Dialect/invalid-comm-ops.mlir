// RUN: whale-opt %s --split-input-file --verify-diagnostics

func.func @group(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{group must be "replicas", "stages" or "shard_peers", not "world"}}
  %s = whale.all_reduce %a over "world" : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @in_place(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error@+1 {{sums its operands in place, so it must be their only user}}
  %s = whale.all_reduce %a over "replicas" : tensor<4xf32> -> tensor<4xf32>
  return %s, %a : tensor<4xf32>, tensor<4xf32>
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
