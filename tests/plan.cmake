numfid_add_test(plan_test SOURCES plan_test.cpp DEPS numfid::numerics numfid_test_support PkgConfig::MPFR PkgConfig::GMP)
