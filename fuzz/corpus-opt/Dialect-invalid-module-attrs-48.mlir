module {
  func.func @m() attributes {whale.model, whale.plan = {stages = 2 : i64, replicas = 2 : i64, grid = array<i64: 0, 1, 2>}} { return }
}
