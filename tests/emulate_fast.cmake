# Bit-exactness of emulate_matmul's vectorised fp32 path (every dispatch path) against the
# generic reduce() path; about 2 s in a Release build.
numfid_add_test(emulate_fast_test SOURCES emulate_fast_test.cpp DEPS numfid::numerics TIMEOUT 120)
