// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-virtual-devices=devices=2\ micro-batches=4 --whale-pipeline=micro-batches=4 | FileCheck %s
// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-virtual-devices=devices=2\ micro-batches=4 --whale-pipeline=micro-batches=4\ schedule=gpipe | FileCheck %s --check-prefix=GPIPE

// virtual_stages = 2: four TaskGraphs are two chunks on each of two
// stages, TaskGraph i on stage i mod 2 as its chunk i / 2.
// CHECK-LABEL: func.func @four
// CHECK-SAME: chunks = 2 : i64
// CHECK-SAME: stages = 2 : i64
// Stage 0 runs 2 (p - 1) + (v - 1) p = 4 forwards ahead, stage 1 two;
// micro-batches go in groups of p = 2, chunk by chunk, backwards from the
// last chunk.
// CHECK: chunk = 0 : i64, schedule = #whale.schedule<F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3>, stage = 0 : i64, virtual_device = array<i64: 0>
// CHECK: chunk = 0 : i64, schedule = #whale.schedule<F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3>, stage = 1 : i64, virtual_device = array<i64: 1>
// CHECK: chunk = 1 : i64, schedule = #whale.schedule<F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3>, stage = 0 : i64, virtual_device = array<i64: 0>
// CHECK: chunk = 1 : i64, {{.*}}stage = 1 : i64, virtual_device = array<i64: 1>
// GPipe interleaved: every forward in that order, then every backward.
// GPIPE: chunk = 0 : i64, schedule = #whale.schedule<F0 F1 F0.1 F1.1 F2 F3 F2.1 F3.1 B0.1 B1.1 B0 B1 B2.1 B3.1 B2 B3>, stage = 0
module attributes {whale.config = #whale.settings<virtual_stages = 2>} {
  func.func @four(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %x : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %b = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %a : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %c = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %b : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %l = whale.taskgraph replicate -> (tensor<f32>) {
      %m = whale.reduce_mean %c axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
      whale.yield %m : tensor<f32>
    }
    return %l : tensor<f32>
  }
}

// -----

// Three TaskGraphs cannot be two chunks on each stage.
module attributes {whale.config = #whale.settings<virtual_stages = 2>} {
  // expected-error@+1 {{has 3 TaskGraphs, which virtual_stages = 2 cannot deal out as 2 model chunks to each of two or more pipeline stages: use a multiple of 2 TaskGraphs, at least 4}}
  func.func @three(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %x : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %b = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %a : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %l = whale.taskgraph replicate -> (tensor<f32>) {
      %m = whale.reduce_mean %b axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
      whale.yield %m : tensor<f32>
    }
    return %l : tensor<f32>
  }
}

// -----

// The chunks of a stage share its devices.
module attributes {whale.config = #whale.settings<virtual_stages = 2>} {
  func.func @counts(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %x : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %b = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %a : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    // expected-error@+1 {{asks for 2 devices but runs as chunk 1 of stage 0, whose chunk 0 asks for 1: the chunks of a stage share its devices, so they ask for the same count}}
    %c = whale.taskgraph replicate(2) -> (tensor<16x4xf32>) {
      %r = whale.relu %b : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %l = whale.taskgraph replicate -> (tensor<f32>) {
      %m = whale.reduce_mean %c axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
      whale.yield %m : tensor<f32>
    }
    return %l : tensor<f32>
  }
}
