# Tests of the ulp helpers and of the numfid executable (golden files in tests/cli/cases/).
numfid_add_test(ulp_test SOURCES ulp_test.cpp DEPS numfid::formats)

numfid_add_test(cli_golden_test SOURCES cli/cli_golden_test.cpp DEPS numfid::tolerances)
target_compile_definitions(cli_golden_test PRIVATE
  NUMFID_BINARY="$<TARGET_FILE:numfid>"
  NUMFID_CLI_CASES="${CMAKE_CURRENT_SOURCE_DIR}/cli/cases"
  NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data"
  NUMFID_PROFILE_DIR="${PROJECT_SOURCE_DIR}/profiles"
  NUMFID_CLI_DATA="${CMAKE_CURRENT_SOURCE_DIR}/cli/data")
add_dependencies(cli_golden_test numfid)

# Exact literal parsing against MPFR's string conversion; hex pattern parsing.
numfid_add_test(value_text_test SOURCES cli/value_text_test.cpp
  DEPS numfid::cli_text PkgConfig::MPFR PkgConfig::GMP)
