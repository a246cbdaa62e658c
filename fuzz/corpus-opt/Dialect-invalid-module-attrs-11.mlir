func.func private @f() attributes {schedule = #whale.schedule<F0 B0 B1 F1>}
