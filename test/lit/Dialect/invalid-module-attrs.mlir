// RUN: whale-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'whale.config' has unknown key 'num_microbatch'}}
module attributes {whale.config = {num_microbatch = 4}} {}

// -----

// expected-error @+1 {{'whale.config' key 'num_micro_batch' must be a positive integer}}
module attributes {whale.config = {num_micro_batch = 0}} {}

// -----

// expected-error @+1 {{'whale.config' key 'auto_parallel' must be a bool}}
module attributes {whale.config = {auto_parallel = 1}} {}

// -----

// expected-error @+1 {{'whale.config' key 'schedule' must be one of: gpipe, 1f1b}}
module attributes {whale.config = {schedule = "interleaved"}} {}

// -----

// expected-error @+1 {{'whale.config' key 'balance' must be one of: even, hardware}}
module attributes {whale.config = {balance = "fast"}} {}

// -----

// expected-error @+1 {{'whale.config' key 'amp' must be one of: off, bf16}}
module attributes {whale.config = {amp = "fp16"}} {}

// -----

// expected-error @+1 {{'whale.config' must be a dictionary}}
module attributes {whale.config = 4} {}

// -----

module {
  // expected-error @+1 {{'whale.config' belongs on the module}}
  func.func @f() attributes {whale.config = {}} { return }
}

// -----

// expected-error @+1 {{'whale.model' is a unit attribute}}
func.func @f() attributes {whale.model = 1} { return }

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
