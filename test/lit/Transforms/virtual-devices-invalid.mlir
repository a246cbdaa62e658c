// RUN: not whale-opt %s --whale-virtual-devices=devices=100000 2>&1 | FileCheck %s
// RUN: not whale-opt %s --whale-virtual-devices=devices=0 2>&1 | FileCheck %s --check-prefix=ZERO

// As many devices as a cluster may have, and at least one.
// CHECK: -whale-virtual-devices needs devices from 1 to 65536, got 100000
// ZERO: -whale-virtual-devices needs devices from 1 to 65536, got 0
module {}
