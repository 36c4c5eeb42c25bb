# Tests of formats/quantize and formats/mx (declared from tests/CMakeLists.txt).
# quantize_test sweeps every fp16, bf16 and fp8 pattern (about 4 s in Release on one core);
# mx_test about 0.2 s.
numfid_add_test(quantize_test SOURCES quantize_test.cpp
  DEPS numfid::formats fmt::fmt PkgConfig::MPFR PkgConfig::GMP)
numfid_add_test(mx_test SOURCES mx_test.cpp DEPS numfid::formats fmt::fmt)
