# Bulk conversion throughput per dispatch path vs the floor loop (figures: docs/performance.md).
add_executable(bulk_benchmark bulk_benchmark.cpp)
target_compile_options(bulk_benchmark PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(bulk_benchmark PRIVATE numfid::formats benchmark::benchmark)
