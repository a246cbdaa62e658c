// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-taskgraph-partition=auto-parallel=true\ num-task-graph=2 | FileCheck %s

// Four ops of equal FLOPs cut for two devices, the first three times as
// fast: it takes three of them, so both stages take the same time.
// CHECK-LABEL: func.func @by_rate
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-3: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 3.0e4>, #whale.device<flops = 1.0e4>]>} {
func.func @by_rate(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}

// -----

// With memory limits, stage 0 goes to the device with the most memory
// (-whale-balance orders them so): here the slow one, which then gets one
// op of the four.
// CHECK-LABEL: func.func @by_memory_order
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-3: whale.relu
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 3.0e4, memory = 1000000>, #whale.device<flops = 1.0e4, memory = 2000000>]>} {
func.func @by_memory_order(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}

// -----

// Under memory: two devices alike in speed, but the second holds 1500
// bytes. Per row of its micro-batch of 8, each relu's output is 32 bytes,
// as is what the stage receives from stage 0 and the model's input every
// rank holds; the last stage keeps 2 micro-batches' worth of activations
// (1 in flight, 1 for gradients): one op needs (2 x 64 + 32) x 8 = 1280
// bytes, two 1792. So it takes one op and the first stage three. The cut
// is recorded for the planner's later runs.
// CHECK-LABEL: func.func @under_memory
// CHECK-SAME: whale.cut = array<i64: 3, 4>
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-3: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4, memory = 1500>]>} {
func.func @under_memory(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}

// -----

// No cut fits: one op alone needs 768 bytes and each device holds 300.
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4, memory = 300>, #whale.device<flops = 1.0e4, memory = 300>]>} {
// expected-error@+1 {{auto_parallel cannot cut it into 2 TaskGraphs that fit their devices' memory: stage 0 (device 0, 300 bytes) cannot hold its part of the parameters, their gradients and optimizer state and the in-flight activations beside the others' parts}}
func.func @cannot_fit(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
}

// -----

// GPUs the cluster names by model are priced op by op as `whale sim` and
// -whale-balance price them: a product of 1.07 GFLOPs, then ten relus of 4
// MFLOPs each that move 32 MiB. By FLOPs the product alone outweighs all
// ten relus, so stage 0 would take the product alone and stage 1 every
// relu (165 us on an A100); there each relu is bound by its memory traffic
// (16.5 us) and the product takes 139 us (the device model's GEMM
// efficiency at this shape), so the product and one relu share stage 0
// (156 us against 148 us).
// CHECK-LABEL: func.func @by_data_sheet
// CHECK-SAME: whale.cut = array<i64: 2, 11>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13, model = "A100-80GB">, #whale.device<flops = 1.0e13, model = "A100-80GB">]>} {
func.func @by_data_sheet(%x: tensor<2048x128xf32>, %w: tensor<128x2048xf32>) -> tensor<2048x2048xf32> attributes {whale.model} {
  %p = whale.matmul %x, %w : tensor<2048x128xf32>, tensor<128x2048xf32> -> tensor<2048x2048xf32>
  %a = whale.relu %p : tensor<2048x2048xf32>
  %b = whale.relu %a : tensor<2048x2048xf32>
  %c = whale.relu %b : tensor<2048x2048xf32>
  %d = whale.relu %c : tensor<2048x2048xf32>
  %e = whale.relu %d : tensor<2048x2048xf32>
  %f = whale.relu %e : tensor<2048x2048xf32>
  %g = whale.relu %f : tensor<2048x2048xf32>
  %h = whale.relu %g : tensor<2048x2048xf32>
  %i = whale.relu %h : tensor<2048x2048xf32>
  %j = whale.relu %i : tensor<2048x2048xf32>
  return %j : tensor<2048x2048xf32>
}
}

// -----

// The same model on GPUs known by their rates alone (`gpus`, no data
// sheet): each is priced as an H100 scaled to its rate, whose memory
// streams each relu in 10 us; the product takes 221 us at 1e13 FLOP/s, so
// it has stage 0 to itself.
// CHECK-LABEL: func.func @rate_only_gpus
// CHECK-SAME: whale.cut = array<i64: 1, 11>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13, gpu = true>, #whale.device<flops = 1.0e13, gpu = true>]>} {
func.func @rate_only_gpus(%x: tensor<2048x128xf32>, %w: tensor<128x2048xf32>) -> tensor<2048x2048xf32> attributes {whale.model} {
  %p = whale.matmul %x, %w : tensor<2048x128xf32>, tensor<128x2048xf32> -> tensor<2048x2048xf32>
  %a = whale.relu %p : tensor<2048x2048xf32>
  %b = whale.relu %a : tensor<2048x2048xf32>
  %c = whale.relu %b : tensor<2048x2048xf32>
  %d = whale.relu %c : tensor<2048x2048xf32>
  %e = whale.relu %d : tensor<2048x2048xf32>
  %f = whale.relu %e : tensor<2048x2048xf32>
  %g = whale.relu %f : tensor<2048x2048xf32>
  %h = whale.relu %g : tensor<2048x2048xf32>
  %i = whale.relu %h : tensor<2048x2048xf32>
  %j = whale.relu %i : tensor<2048x2048xf32>
  return %j : tensor<2048x2048xf32>
}
}

// -----

// The same on one-thread CPU devices of that rate: they stream 8 GB/s, so
// every op is bound by its memory: each relu's 32 MiB of traffic takes 4.2
// ms, and the product its BLAS's copies of A, B and C at 8 bytes an
// element (36 MiB, 4.8 ms; perfmodel/DeviceModel.h, cpuPackingUse): the
// product and four relus (21.6 ms) against six (25.2 ms), where the
// product and five would take 25.8.
// CHECK-LABEL: func.func @cpu_devices
// CHECK-SAME: whale.cut = array<i64: 5, 11>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e13>, #whale.device<flops = 1.0e13>]>} {
func.func @cpu_devices(%x: tensor<2048x128xf32>, %w: tensor<128x2048xf32>) -> tensor<2048x2048xf32> attributes {whale.model} {
  %p = whale.matmul %x, %w : tensor<2048x128xf32>, tensor<128x2048xf32> -> tensor<2048x2048xf32>
  %a = whale.relu %p : tensor<2048x2048xf32>
  %b = whale.relu %a : tensor<2048x2048xf32>
  %c = whale.relu %b : tensor<2048x2048xf32>
  %d = whale.relu %c : tensor<2048x2048xf32>
  %e = whale.relu %d : tensor<2048x2048xf32>
  %f = whale.relu %e : tensor<2048x2048xf32>
  %g = whale.relu %f : tensor<2048x2048xf32>
  %h = whale.relu %g : tensor<2048x2048xf32>
  %i = whale.relu %h : tensor<2048x2048xf32>
  %j = whale.relu %i : tensor<2048x2048xf32>
  return %j : tensor<2048x2048xf32>
}
}
