# Tests of the ulp helpers and of the numfid executable (golden files in tests/cli/).
numfid_add_test(ulp_test SOURCES ulp_test.cpp DEPS numfid::formats)
