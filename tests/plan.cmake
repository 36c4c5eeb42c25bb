numfid_add_test(plan_test SOURCES plan_test.cpp DEPS numfid::numerics numfid_test_support PkgConfig::MPFR PkgConfig::GMP)
target_compile_definitions(plan_test PRIVATE NUMFID_TEST_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data")
