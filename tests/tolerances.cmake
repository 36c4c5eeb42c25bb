numfid_add_test(tolerances_test SOURCES tolerances_test.cpp DEPS numfid::tolerances)
