# Bulk conversion (formats/bulk.h): every dispatch path against the scalar convert.
numfid_add_test(bulk_test SOURCES bulk_test.cpp DEPS numfid::formats fmt::fmt)
# The full 2^32 sweep of each fp32 -> narrow conversion: the same source compiled with
# NUMFID_BULK_EXHAUSTIVE, one ctest test per (format, options); hours on one core in all.
numfid_add_test(bulk_exhaustive_test SOURCES bulk_test.cpp DEPS numfid::formats fmt::fmt
  LABELS exhaustive TIMEOUT 7200)
target_compile_definitions(bulk_exhaustive_test PRIVATE NUMFID_BULK_EXHAUSTIVE=1)
