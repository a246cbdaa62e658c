// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @not_a_param(%x: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{updates a parameter: its first operand must come from whale.param}}
  whale.sgd_update %x, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_range(%g: tensor<4xf32>) {
  %p = whale.param "p" zeros [] : tensor<4xf32>
  // expected-error @+1 {{needs lr >= 0, momentum in [0, 1) and weight_decay >= 0}}
  whale.sgd_update %p, %g {lr = 0.1 : f64, momentum = 1.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_not_a_param(%x: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{updates a parameter: its first operand must come from whale.param}}
  whale.adam_update %x, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_range(%g: tensor<4xf32>) {
  %p = whale.param "p" zeros [] : tensor<4xf32>
  // expected-error @+1 {{needs lr >= 0, betas in [0, 1), eps > 0 and weight_decay >= 0}}
  whale.adam_update %p, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, eps = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @clip_types(%g: tensor<4xf32>) {
  // expected-error @+1 {{results must have the types of the gradients}}
  %c = whale.clip_grad_norm %g max_norm = 1.0 : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @clip_norm(%g: tensor<4xf32>) {
  // expected-error @+1 {{max_norm must be positive}}
  %c = whale.clip_grad_norm %g max_norm = 0.0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @owner_without_group(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error@+1 {{takes an owner and its group together}}
  whale.sgd_update %w, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, owner = 1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @owner_negative(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error@+1 {{owner must be a position in its group, not -1}}
  whale.adam_update %w, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = -1 : i64, group = "replicas"} : tensor<4xf32>
  return
}

// -----

func.func @owner_group_unknown(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error@+1 {{group must be "replicas", "stages", "shard_peers" or "hsdp", not "pods"}}
  whale.sgd_update %w, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, owner = 0 : i64, group = "pods"} : tensor<4xf32>
  return
}

// -----

func.func @clip_owners_count(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error@+1 {{has 1 owners for 2 gradients: it needs one per gradient}}
  %c:2 = whale.clip_grad_norm %a, %b max_norm = 1.0 {owners = array<i64: 0>} : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @clip_owners_range(%a: tensor<4xf32>) {
  // expected-error@+1 {{owners are positions in their groups, or -1}}
  %c = whale.clip_grad_norm %a max_norm = 1.0 {owners = array<i64: -2>} : tensor<4xf32> -> tensor<4xf32>
  return
}
