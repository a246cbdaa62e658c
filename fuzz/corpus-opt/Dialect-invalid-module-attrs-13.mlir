func.func private @f() attributes {schedule = #whale.schedule<F0 F1 B0>}
