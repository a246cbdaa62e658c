module {
  func.func @m() attributes {whale.model, whale.plan = {replicas = 0 : i64}} { return }
}
