# Oracles: the long accumulator against MPFR, the MPFR oracles against Boost.Multiprecision
# and known values. Default-suite budget: a few seconds each in a Release build.
numfid_add_test(accumulator_test SOURCES accumulator_test.cpp DEPS numfid::oracles)
numfid_add_test(oracles_test SOURCES oracles_test.cpp DEPS numfid::oracles Boost::headers)
