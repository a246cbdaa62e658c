func.func @f() attributes {whale.default_devices = 0} { return }
