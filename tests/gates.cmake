# Gate files (gates/gate.h): strict loading, runs over the example data, JUnit and JSON reports.
numfid_add_test(gate_test SOURCES gate_test.cpp DEPS numfid::gates nlohmann_json::nlohmann_json fmt::fmt)
target_compile_definitions(gate_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data"
                                             NUMFID_CLI_DATA="${PROJECT_SOURCE_DIR}/tests/cli/data")
numfid_add_test(gate_baseline_test SOURCES gate_baseline_test.cpp DEPS numfid::gates fmt::fmt)
target_compile_definitions(gate_baseline_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")
numfid_add_test(gate_shard_test SOURCES gate_shard_test.cpp DEPS numfid::gates fmt::fmt)
target_compile_definitions(gate_shard_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")
numfid_add_test(gate_migration_test SOURCES gate_migration_test.cpp DEPS numfid::gates fmt::fmt)
target_compile_definitions(gate_migration_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")

# The example gate (examples/gate/README.md): its data generator, and the whole example run
# with its expected exit codes, a sharded run merged, and the HTML report in headless Chromium.
add_executable(make_gate_data ${PROJECT_SOURCE_DIR}/examples/gate/make_gate_data.cpp)
target_compile_options(make_gate_data PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(make_gate_data PRIVATE numfid::tolerances numfid::io)
add_test(NAME example_gate
  COMMAND ${PROJECT_SOURCE_DIR}/examples/gate/run-example $<TARGET_FILE:numfid> $<TARGET_FILE:make_gate_data>
          ${CMAKE_CURRENT_BINARY_DIR}/example_gate)
set_tests_properties(example_gate PROPERTIES FIXTURES_SETUP example_gate_report TIMEOUT 300)

add_executable(gate_report_check gate_report_check.cpp)
target_compile_options(gate_report_check PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(gate_report_check PRIVATE fmt::fmt nlohmann_json::nlohmann_json)
add_test(NAME gate_report_chromium
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gate_report_chromium.sh $<TARGET_FILE:gate_report_check>
          ${CMAKE_CURRENT_BINARY_DIR}/example_gate)
set_tests_properties(gate_report_chromium PROPERTIES FIXTURES_REQUIRED example_gate_report TIMEOUT 300)

# The error-field summary behind the gate's figures (tolerances/error_field.h).
numfid_add_test(error_field_test SOURCES error_field_test.cpp DEPS numfid::tolerances)

# Integer and scaled gate cases with scale files, and the one scale-file reader.
numfid_add_test(gate_quant_test SOURCES gate_quant_test.cpp DEPS numfid::gates numfid::io fmt::fmt)
target_compile_definitions(gate_quant_test PRIVATE NUMFID_CLI_DATA="${PROJECT_SOURCE_DIR}/tests/cli/data")
