func.func private @f() attributes {schedule = #whale.schedule<F1 F0 B0 B1>}
