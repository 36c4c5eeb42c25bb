# Gate files (gates/gate.h): strict loading, runs over the example data, JUnit and JSON reports.
numfid_add_test(gate_test SOURCES gate_test.cpp DEPS numfid::gates nlohmann_json::nlohmann_json fmt::fmt)
target_compile_definitions(gate_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")
numfid_add_test(gate_baseline_test SOURCES gate_baseline_test.cpp DEPS numfid::gates fmt::fmt)
target_compile_definitions(gate_baseline_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")
numfid_add_test(gate_shard_test SOURCES gate_shard_test.cpp DEPS numfid::gates fmt::fmt)
target_compile_definitions(gate_shard_test PRIVATE NUMFID_EXAMPLE_DATA="${PROJECT_SOURCE_DIR}/examples/data")
