func.func @bad_strategy() {
  whale.taskgraph pipeline {
    whale.yield
  }
  return
}
