# numfid::gtest: the assertions, matchers and conformance suites (suites/).
numfid_add_test(suites_test SOURCES suites_test.cpp DEPS numfid::gtest numfid::io fmt::fmt)
# The reproduction a failed assertion prints is run with the CLI built here.
target_compile_definitions(suites_test PRIVATE NUMFID_CLI="$<TARGET_FILE:numfid>")
add_dependencies(suites_test numfid)
numfid_add_test(suites_conformance_test SOURCES suites_conformance_test.cpp DEPS numfid::gtest fmt::fmt)
numfid_add_test(suites_quant_conformance_test SOURCES suites_quant_conformance_test.cpp DEPS numfid::gtest fmt::fmt)
