func.func @f() attributes {whale.strategy = 1} { return }
