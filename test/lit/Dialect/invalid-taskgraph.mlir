// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @nested(%x: tensor<4xf32>) {
  // expected-note @+1 {{enclosing TaskGraph}}
  whale.taskgraph replicate(2) {
    // expected-error @+1 {{is nested in another TaskGraph; TaskGraphs do not nest}}
    whale.taskgraph split(2) {
      whale.yield
    }
    whale.yield
  }
  return
}

// -----

func.func @yield_types(%x: tensor<4xf32>) {
  %r = whale.taskgraph replicate -> (tensor<8xf32>) {
    // expected-error @+1 {{yields 1 values whose types do not match the 1 results of the TaskGraph}}
    whale.yield %x : tensor<4xf32>
  }
  return
}

// -----

func.func @no_yield(%x: tensor<4xf32>) {
  // expected-error @+1 {{body must end with whale.yield}}
  "whale.taskgraph"() <{strategy = #whale<strategy replicate>}> ({
    %p = whale.param "p" zeros [] : tensor<4xf32>
  }) : () -> ()
  return
}

// -----

func.func @block_args() {
  // expected-error @+1 {{body takes no block arguments}}
  "whale.taskgraph"() <{strategy = #whale<strategy replicate>}> ({
  ^bb0(%a: tensor<4xf32>):
    whale.yield
  }) : () -> ()
  return
}

// -----

func.func @zero_devices() {
  // expected-error @+1 {{attribute 'devices' failed to satisfy constraint}}
  whale.taskgraph replicate(0) {
    whale.yield
  }
  return
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'whale.taskgraph'}}
  whale.yield %x : tensor<4xf32>
}

// -----

func.func @bad_strategy() {
  // expected-error @+1 {{unknown strategy 'pipeline'}}
  whale.taskgraph pipeline {
    whale.yield
  }
  return
}

// -----

// No more devices than a cluster may have: 2^63-1 was taken as the size of
// per-device tables.
func.func @too_many_devices() {
  // expected-error @+1 {{asks for 9223372036854775807 devices; a cluster has at most 65536}}
  whale.taskgraph replicate(9223372036854775807) {
    whale.yield
  }
  return
}
