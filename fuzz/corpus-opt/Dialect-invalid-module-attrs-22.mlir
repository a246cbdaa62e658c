func.func private @f() attributes {schedule = #whale.schedule<F0 F1 F1.1 F0.1 B0 B1 B0.1 B1.1>}
