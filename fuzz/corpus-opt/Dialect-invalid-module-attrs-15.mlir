func.func @f() attributes {whale.model = 1} { return }
