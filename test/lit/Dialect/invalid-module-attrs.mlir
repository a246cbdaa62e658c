// RUN: whale-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{unknown setting 'num_microbatch'; the settings are num_micro_batch, num_task_graph, task_graph_split, bucket_bytes, auto_parallel, recompute, shard_optimizer, shard_parameters, shard_gradients, schedule, balance, split_matmul, split_rows, amp, grad_sync, virtual_stages, gather_layers, shard_group, gather_every}}
module attributes {whale.config = #whale.settings<num_microbatch = 4>} {}

// -----

// expected-error @+1 {{setting 'num_micro_batch' must be a positive integer}}
module attributes {whale.config = #whale.settings<num_micro_batch = 0>} {}

// -----

// expected-error @+1 {{setting 'num_micro_batch' is given twice}}
module attributes {whale.config = #whale.settings<num_micro_batch = 2, num_micro_batch = 4>} {}

// -----

// expected-error @+1 {{setting 'auto_parallel' must be true or false}}
module attributes {whale.config = #whale.settings<auto_parallel = 1>} {}

// -----

// expected-error @+1 {{setting 'schedule' must be one of: gpipe, 1f1b, not "interleaved"}}
module attributes {whale.config = #whale.settings<schedule = "interleaved">} {}

// -----

// expected-error @+1 {{setting 'balance' must be one of: even, hardware, not "fast"}}
module attributes {whale.config = #whale.settings<balance = "fast">} {}

// -----

// expected-error @+1 {{setting 'amp' must be one of: off, bf16, not "fp16"}}
module attributes {whale.config = #whale.settings<amp = "fp16">} {}

// -----

// expected-error @+1 {{setting 'split_rows' must be one of: part, whole, not "some"}}
module attributes {whale.config = #whale.settings<split_rows = "some">} {}

// -----

// expected-error @+1 {{setting 'grad_sync' must be one of: overlap, after_backward, not "later"}}
module attributes {whale.config = #whale.settings<grad_sync = "later">} {}

// -----

// expected-error @+1 {{'whale.config' must be a #whale.settings attribute, not {num_micro_batch = 4 : i64}}}
module attributes {whale.config = {num_micro_batch = 4}} {}

// -----

module {
  // expected-error @+1 {{'whale.config' belongs on the module}}
  func.func @f() attributes {whale.config = #whale.settings<>} { return }
}

// -----

// The schedule: each micro-batch's forward, then its backward, in order.
// expected-error @+1 {{schedule step B1 comes before its forward}}
func.func private @f() attributes {schedule = #whale.schedule<F0 B0 B1 F1>}

// -----

// expected-error @+1 {{schedule step F1 comes where F0 belongs}}
func.func private @f() attributes {schedule = #whale.schedule<F1 F0 B0 B1>}

// -----

// expected-error @+1 {{schedule has 2 forwards but 1 backwards}}
func.func private @f() attributes {schedule = #whale.schedule<F0 F1 B0>}

// -----

// expected-error @+1 {{expected a schedule step such as F0, B3 or F2.1 (micro-batch 2 of chunk 1), got 'X0'}}
func.func private @f() attributes {schedule = #whale.schedule<F0 X0>}

// -----

// expected-error @+1 {{'whale.model' is a unit attribute}}
func.func @f() attributes {whale.model = 1} { return }

// -----

// Recomputation's mark (lowering/Passes.h: kRecomputedAttr).
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'whale.recomputed' is a unit attribute}}
  %y = whale.neg %x {whale.recomputed = 1 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// expected-error @+1 {{'whale.default_strategy' must be a strategy}}
func.func @f() attributes {whale.default_strategy = "replicate"} { return }

// -----

// expected-error @+1 {{'whale.default_devices' must be a positive integer}}
func.func @f() attributes {whale.default_devices = 0} { return }

// -----

// expected-error @+1 {{'whale.train' must be a dictionary}}
func.func @f() attributes {whale.train = 1} { return }

// -----

// expected-error @+1 {{'whale.train' needs a positive integer 'steps'}}
func.func @f() attributes {whale.train = {steps = 0}} { return }

// -----

// expected-error @+1 {{unknown whale attribute 'whale.strategy'}}
func.func @f() attributes {whale.strategy = 1} { return }

// -----

// expected-error @+1 {{'whale.inputs' must name each argument of its function}}
func.func @m(%x: tensor<2xf32>) attributes {whale.inputs = ["x", "y"]} {
  return
}

// -----

// Interleaved: each chunk's micro-batches in order.
// expected-error @+1 {{schedule step F1.1 comes where F0.1 belongs}}
func.func private @f() attributes {schedule = #whale.schedule<F0 F1 F1.1 F0.1 B0 B1 B0.1 B1.1>}

// -----

// expected-error @+1 {{schedule runs 2 micro-batches on chunk 0 but 1 on chunk 1}}
func.func private @f() attributes {schedule = #whale.schedule<F0 F1 F0.1 B0.1 B0 B1>}

// -----

// expected-error @+1 {{schedule has 1 forwards but 0 backwards on chunk 1}}
func.func private @f() attributes {schedule = #whale.schedule<F0 F0.1 B0>}

// -----

// expected-error @+1 {{setting 'virtual_stages' must be a positive integer}}
module attributes {whale.config = #whale.settings<virtual_stages = 0>} {}

// -----

// Where a step's micro-batch starts in its rank's rows: on a call only.
func.func private @step(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'whale.row_offset' is a row count, not negative, on a call}}
  %y = call @step(%x) {whale.row_offset = -2 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{'whale.row_offset' is a row count, not negative, on a call}}
func.func @g() attributes {whale.row_offset = 2 : i64} { return }

// -----

// A plan's settings are the config's words: "given" is the planner's own.
// expected-error @+1 {{setting 'balance' must be one of: even, hardware, not "given"}}
module attributes {whale.config = #whale.settings<balance = "given">} {}

// -----

// Layers gathered together mean something only where parameters are
// sharded (gathered); one, the default, anywhere.
// expected-error @+1 {{setting 'gather_layers' needs shard_parameters = true: only sharded parameters are gathered}}
module attributes {whale.config = #whale.settings<gather_layers = 2>} {}

// -----

module attributes {whale.config = #whale.settings<gather_layers = 1>} {}

// -----

// Sharding groups mean something only where state is sharded.
// expected-error @+1 {{setting 'shard_group' needs shard_optimizer, shard_gradients or shard_parameters = true: only sharded state is sharded in groups}}
module attributes {whale.config = #whale.settings<shard_group = 2>} {}

// -----

module attributes {whale.config = #whale.settings<shard_gradients = true, shard_group = 2>} {}

// -----

// How often parameters are gathered means something only where they are
// sharded.
// expected-error @+1 {{setting 'gather_every' needs shard_parameters = true: only sharded parameters are gathered}}
module attributes {whale.config = #whale.settings<gather_every = "step">} {}

// -----

// expected-error @+1 {{setting 'gather_every' must be one of: micro_batch, step}}
module attributes {whale.config = #whale.settings<shard_parameters = true, gather_every = "layer">} {}

// -----

module attributes {whale.config = #whale.settings<shard_parameters = true, gather_every = "step">} {
  // expected-error @+1 {{'whale.gather_every' is "micro_batch" or "step" on a function}}
  func.func @m() attributes {whale.gather_every = "often"} { return }
}

// -----

module attributes {whale.config = #whale.settings<shard_parameters = true>} {
  // expected-error @+1 {{'whale.gather_layers' is a positive integer on a function}}
  func.func @m() attributes {whale.gather_layers = 0 : i64} { return }
}

// -----

// The plan holds only the entries of dialects/Whale/IR/PlanEntries.def.
module {
  // expected-error @+1 {{'whale.plan' has no entry 'stage'; its entries are devices, stages, replicas, grid, shards, chunks, row_group, balance, local_batches, device_memory, device_activations, device_seconds, shifts, shard_weights, shard_weight, global_batch, micro_batches, micro_batch, schedule, grad_weight, buckets, loss_shards, loss_scale}}
  func.func @m() attributes {whale.model, whale.plan = {stage = 1 : i64}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'stages' must be an i64, not 2 : i32}}
  func.func @m() attributes {whale.model, whale.plan = {stages = 2 : i32}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'grid' must be an array<i64>, not [0, 1]}}
  func.func @m() attributes {whale.model, whale.plan = {grid = [0, 1]}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'grad_weight' must be an f64, not 1 : i64}}
  func.func @m() attributes {whale.model, whale.plan = {grad_weight = 1 : i64}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'schedule' must be one of "gpipe", "1f1b", not "interleaved"}}
  func.func @m() attributes {whale.model, whale.plan = {schedule = "interleaved"}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'balance' must be one of "even", "hardware", "given", not 1 : i64}}
  func.func @m() attributes {whale.model, whale.plan = {balance = 1}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'device_seconds' must be an array<f64>, not array<i64: 1>}}
  func.func @m() attributes {whale.model, whale.plan = {device_seconds = array<i64: 1>}} { return }
}

// -----

// The devices a plan is for (lowering/Transforms/Parallel/ClusterView.h): a #whale.cluster of
// #whale.device, each value checked as the attribute is made.
// expected-error @+1 {{'whale.cluster' is a #whale.cluster on the module}}
module attributes {whale.cluster = {flops = array<f64: 1.0e9, 1.0e9>, memory = array<i64: 0, 0>}} {}

// -----

// expected-error @+2 {{a device's rate must be positive, got 0}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 0.0>]>} {}

// -----

// expected-error @+2 {{a device's memory limit must not be negative, got -1}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, memory = -1>]>} {}

// -----

// expected-error @+2 {{a device runs with at least one thread, got 0}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9>, #whale.device<flops = 1.0e9, threads = 0>]>} {}

// -----

// expected-error @+2 {{a device's share of its GPU is a count of SMs (0: the whole GPU), got -8}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, gpu = true, sms = -8>]>} {}

// -----

// expected-error @+2 {{the contexts on a device's GPU count itself (1: a GPU of its own), got 0}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, contexts = 0>]>} {}

// -----

// expected-error @+2 {{a CPU device's share of its cores is in (0, 1], got 1.5}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, share = 1.5 : f64>]>} {}

// -----

// expected-error @+2 {{a share of cores' time is a CPU device's; a GPU's share is its SMs (sms)}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, gpu = true, share = 0.5 : f64>]>} {}

// -----

// expected-error @+2 {{a device's memory bandwidth must be positive, got -1}}
// expected-error @+1 {{failed to parse Whale_ClusterAttr parameter 'devices'}}
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, bandwidth = -1.0 : f64>]>} {}


// -----

module {
  // expected-error @+1 {{'whale.cluster' is a #whale.cluster on the module}}
  func.func @f() attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9>]>} { return }
}

// -----

// A model is a function with a body: four passes once dereferenced a
// declaration's missing block.
// expected-error @+1 {{'whale.model' marks a function with a body, not a declaration}}
func.func private @m(%x: tensor<4xf32>) -> tensor<f32> attributes {whale.model}

// -----

// A plan's counts are checked for range, not type alone: each of these
// once crashed a pass (a division by zero, a vector sized 2^40, an index
// past a table).
module {
  // expected-error @+1 {{'whale.plan' entry 'replicas' must be from 1 to 65536, not 0}}
  func.func @m() attributes {whale.model, whale.plan = {replicas = 0 : i64}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'micro_batches' must be from 1 to 1048576, not 1099511627776}}
  func.func @m() attributes {whale.model, whale.plan = {micro_batches = 1099511627776 : i64}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'stages' must be from 1 to 1024, not -1}}
  func.func @m() attributes {whale.model, whale.plan = {stages = -1 : i64}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' entry 'grid' must be from 0 to 65535, not -2}}
  func.func @m() attributes {whale.model, whale.plan = {grid = array<i64: 0, -2>}} { return }
}

// -----

// The grid places each stage's replicas on the plan's devices.
module {
  // expected-error @+1 {{'whale.plan' has a grid of 3 places for 2 stages of 2 replicas}}
  func.func @m() attributes {whale.model, whale.plan = {stages = 2 : i64, replicas = 2 : i64, grid = array<i64: 0, 1, 2>}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.plan' places a stage on device 4 of 4}}
  func.func @m() attributes {whale.model, whale.plan = {devices = 4 : i64, grid = array<i64: 0, 4>}} { return }
}

// -----

// A train block meets the rules a script's meets (support/SettingCtors.h).
module {
  // expected-error @+1 {{'whale.train' has no entry 'epochs'}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, epochs = 2}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'data' needs 'batch'}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, data = {kind = "synthetic"}}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'data' must be a dictionary whose 'kind' is one of the data constructors}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, data = {kind = "adam", batch = 4}}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'optimizer' 'lr' must be a number in sgd(...)'s range}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, optimizer = {kind = "sgd", lr = -0.1}}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'optimizer' has 'nesterov', which sgd(...) does not take}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, optimizer = {kind = "sgd", lr = 0.1, nesterov = 1}}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'data' 'path' must be a non-empty string}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, data = {kind = "text", path = "", seq = 4, batch = 2}}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'clip_grad_norm' must be a positive number}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, clip_grad_norm = 0.0}} { return }
}

// -----

module {
  // expected-error @+1 {{'whale.train' entry 'save_every' must be a positive integer}}
  func.func @m() attributes {whale.model, whale.train = {steps = 1, save_every = 0}} { return }
}
