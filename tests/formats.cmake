# Formats core tests against the MPFR oracle (tests/support). Default-suite budget: see
# each test's comment; the exhaustive fp32 sweep is labelled `exhaustive` (not run by default).
numfid_add_test(convert_test SOURCES convert_test.cpp DEPS numfid::formats numfid_test_support)
numfid_add_test(arith_test SOURCES arith_test.cpp DEPS numfid::formats numfid_test_support)
numfid_add_test(rounding_test SOURCES rounding_test.cpp DEPS numfid::formats numfid_test_support)
# Every fp32 pattern into the narrower formats: hours of CPU (see the file's header).
numfid_add_test(convert_exhaustive_test SOURCES convert_exhaustive_test.cpp DEPS numfid::formats numfid_test_support
  LABELS exhaustive TIMEOUT 14400)
# formats/platform.h: CPU features and FpEnvGuard — oracles and models give the same bits
# under a caller's DAZ|FTZ and rounding toward zero (the -ffast-math case). Under a second.
numfid_add_test(platform_test SOURCES platform_test.cpp DEPS numfid::formats numfid::oracles numfid::numerics)
# The same promise in a consumer built with -ffast-math (crtfastmath.o sets DAZ|FTZ before main).
numfid_add_test(platform_fastmath_test SOURCES platform_fastmath_test.cpp DEPS numfid::oracles numfid::numerics)
target_compile_options(platform_fastmath_test PRIVATE -ffast-math)
target_link_options(platform_fastmath_test PRIVATE -ffast-math)
