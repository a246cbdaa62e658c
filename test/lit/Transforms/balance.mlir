// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-balance | FileCheck %s

// One weight (16x16 f32: 1024 bytes, with its gradient 2048) and 128 bytes
// of activations per sample (the matmul's and relu's outputs), held twice
// (in flight, and their gradients), plus the sample's 64 bytes of input:
// 320 bytes a sample.
// A step is the forward and the backward autodiff builds for it (the
// weight's gradient; the input needs none), each op priced by the device
// model of a one-thread CPU at the declared rate (perfmodel/DeviceSpeed.h).
// At so slow a rate the BLAS's copies of the operands cost next to
// nothing beside the multiply-adds (perfmodel/DeviceModel.h,
// cpuPackingUse), so the step takes 0.0448 s a row at 3e4 FLOP/s. A device
// three times as fast gets three times the samples; both then take the
// same time (2.1505 s).
// CHECK-LABEL: func.func @proportional
// CHECK-SAME: balance = "hardware"
// CHECK-SAME: device_memory = array<i64: 17414, 7170>
// CHECK-SAME: device_seconds = array<f64: 2.15050{{[0-9]*}}, 2.15050{{[0-9]*}}>
// CHECK-SAME: local_batches = array<i64: 48, 16>
// CHECK-SAME: micro_batch = 48
// CHECK-SAME: shifts = []
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 3.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @proportional(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
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

// -----

// Algorithm 1: device 0 (twice as fast) would take 32 samples, but its
// 8300 bytes hold 19 (2048 + 320 x 19 = 8129). It sheds the other 13, all
// to device 1: of the two with room, equally loaded, the first.
// CHECK-LABEL: func.func @memory_shift
// CHECK-SAME: local_batches = array<i64: 19, 29, 16>
// CHECK-SAME: shifts = [array<i64: 0, 1, 13>]
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 2.0e4, memory = 8300>, #whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @memory_shift(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 3 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1, 2>, micro_batch = 21 : i64, micro_batches = 1 : i64, replicas = 3 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1, 2>} {
    %w = whale.param "m/w" zeros [] : tensor<16x16xf32>
    %h = whale.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %r = whale.relu %h : tensor<64x16xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<64x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// Two devices holding 19 samples each cannot take 64 between them.
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 8300>, #whale.device<flops = 1.0e4, memory = 8300>]>} {
func.func @cannot_fit(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  // expected-error@+1 {{does not fit on device 0: it needs 12292 bytes (2048 for parameters, gradients and optimizer state, 10244 for activations: 1 micro-batch of 32 samples in flight and their gradients), over the device's limit of 8300 bytes: the other devices have no room for its excess (the cluster holds at most 38 of the 64 samples)}}
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

// -----

// An even plan only checks memory: 32 samples do not fit in 8300 bytes.
module attributes {whale.config = #whale.settings<balance = "even">, whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 8300>, #whale.device<flops = 1.0e4>]>} {
func.func @even_over(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  // expected-error@+1 {{does not fit on device 0: it needs 12292 bytes}}
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

// -----

// Not even the weight and its gradient fit.
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 1000>, #whale.device<flops = 1.0e4>]>} {
func.func @parameters_too_big(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  // expected-error@+1 {{does not fit on device 0: its parameters, gradients and optimizer state need 2048 bytes, over the device's limit of 1000 bytes}}
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

// -----

// A two-stage pipeline on a small device (0) and a large one (1): stage 0
// holds two micro-batches in flight under 1F1B, so it goes to device 1.
// CHECK-LABEL: func.func @stage_order
// CHECK-SAME: grid = array<i64: 1, 0>
// CHECK: whale.taskgraph replicate {{.*}}stage = 0 : i64, virtual_device = array<i64: 1>
// CHECK: whale.taskgraph replicate {{.*}}stage = 1 : i64, virtual_device = array<i64: 0>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 100000>, #whale.device<flops = 1.0e4, memory = 200000>]>} {
func.func @stage_order(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 16 : i64, micro_batches = 4 : i64, replicas = 1 : i64, schedule = "1f1b", shards = array<i64: 1, 1>, stages = 2 : i64}} {
  %h = whale.taskgraph replicate -> (tensor<64x16xf32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0>} {
    %w = whale.param "m/w" zeros [] : tensor<16x16xf32>
    %a = whale.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    whale.yield %a : tensor<64x16xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 1 : i64, virtual_device = array<i64: 1>} {
    %r = whale.relu %h : tensor<64x16xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<64x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// split(2) on four devices: each shard group takes one share, by its
// slowest member; the group of fast devices gets three times the rows.
// CHECK-LABEL: func.func @shard_groups
// CHECK-SAME: local_batches = array<i64: 24, 24, 8, 8>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 3.0e4>, #whale.device<flops = 3.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @shard_groups(%x: tensor<64x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 4 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1, 2, 3>, micro_batch = 16 : i64, micro_batches = 1 : i64, replicas = 4 : i64, schedule = "1f1b", shards = array<i64: 2>, stages = 1 : i64}} {
  %l = whale.taskgraph split(2) -> (tensor<f32>) attributes {shards = 2 : i64, stage = 0 : i64, virtual_device = array<i64: 0, 1, 2, 3>} {
    %w = whale.param "m/w" zeros [] : tensor<16x16xf32>
    %h = whale.matmul %x, %w : tensor<64x16xf32>, tensor<16x16xf32> -> tensor<64x16xf32>
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<64x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// The global batch must give every replica a sample.
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
// expected-error@+1 {{the global batch of 2 is too small to give each of 3 replicas at least 1 samples}}
func.func @too_small(%x: tensor<2x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 3 : i64, global_batch = 2 : i64, grid = array<i64: 0, 1, 2>, micro_batch = 1 : i64, micro_batches = 1 : i64, replicas = 3 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1, 2>} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// GPUs named by their data sheets are priced op by op as the simulator
// prices them, whatever rate the cluster declares: in fp32 an A100's
// matmuls run at 19.5 TFLOP/s against a V100's 15.7 and its ReLU streams
// 2039 GB/s against 900, so it takes the larger share although both
// declare the same rate: about 1.22 times the V100's (3.82 against 4.64
// us a row for the product, the weight's gradient and the ReLU's two).
// CHECK-LABEL: func.func @data_sheets
// CHECK-SAME: local_batches = array<i64: 4496, 3696>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13, model = "A100-80GB">, #whale.device<flops = 1.0e13, model = "V100">]>} {
func.func @data_sheets(%x: tensor<4096x4096xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 8192 : i64, grid = array<i64: 0, 1>, micro_batch = 4096 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1>} {
    %w = whale.param "m/w" zeros [] : tensor<4096x4096xf32>
    %h = whale.matmul %x, %w : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    %r = whale.relu %h : tensor<4096x4096xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<4096x4096xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// Under amp = "bf16" the matmuls run at the tensor cores' bf16 rates, 312
// TFLOP/s against the V100's 125 (its fp16 rate): the A100's share grows
// to about 2.4 times the V100's (0.31 against 0.73 us a row).
// CHECK-LABEL: func.func @data_sheets_amp
// CHECK-SAME: local_batches = array<i64: 5762, 2430>
module attributes {whale.config = #whale.settings<amp = "bf16">, whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13, model = "A100-80GB">, #whale.device<flops = 1.0e13, model = "V100">]>} {
func.func @data_sheets_amp(%x: tensor<4096x4096xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 8192 : i64, grid = array<i64: 0, 1>, micro_batch = 4096 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1>} {
    %w = whale.param "m/w" zeros [] : tensor<4096x4096xf32>
    %h = whale.matmul %x, %w : tensor<4096x4096xf32>, tensor<4096x4096xf32> -> tensor<4096x4096xf32>
    %r = whale.relu %h : tensor<4096x4096xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<4096x4096xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// A plan without its device grid (or its global batch) is refused, not read.
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>]>} {
// expected-error@+1 {{has no micro-batches; run -whale-virtual-devices and -whale-pipeline first}}
func.func @no_grid(%x: tensor<4x16xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<4x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// A device given a quarter of its core's time (cpu:1@share=0.25) moves
// bytes only while the kernel lets it run: its memory traffic is priced
// at a quarter of the core's bandwidth too, so a model of memory-bound ops
// (an add and a relu of 16 KiB rows) gives it a quarter of the rows. Left
// at the whole core's bandwidth, as before the share was carried into the
// IR, the two devices priced alike and split the batch 32 / 32 (issue 88).
// CHECK-LABEL: func.func @memory_bound_share
// CHECK-SAME: local_batches = array<i64: 51, 13>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e11>, #whale.device<flops = 2.5e10, share = 0.25 : f64>]>} {
func.func @memory_bound_share(%x: tensor<64x4096xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, global_batch = 64 : i64, grid = array<i64: 0, 1>, micro_batch = 32 : i64, micro_batches = 1 : i64, replicas = 2 : i64, schedule = "1f1b", shards = array<i64: 1>, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1>} {
    %b = whale.param "m/b" zeros [] : tensor<4096xf32>
    %h = whale.add %x, %b : tensor<64x4096xf32>, tensor<4096xf32> -> tensor<64x4096xf32>
    %r = whale.relu %h : tensor<64x4096xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<64x4096xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
