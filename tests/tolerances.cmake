numfid_add_test(tolerances_test SOURCES tolerances_test.cpp DEPS numfid::tolerances)
# The check pipeline as a library (tolerances/check.h).
numfid_add_test(check_test SOURCES check_test.cpp DEPS numfid::tolerances fmt::fmt)
