func.func @g() attributes {whale.row_offset = 2 : i64} { return }
