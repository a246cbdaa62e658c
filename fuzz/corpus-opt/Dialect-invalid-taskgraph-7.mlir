func.func @too_many_devices() {
  whale.taskgraph replicate(9223372036854775807) {
    whale.yield
  }
  return
}
