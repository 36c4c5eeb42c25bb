# Block-FMA (tensor-core) model throughput (figures: docs/tensor-cores.md).
add_executable(numerics_benchmark numerics_benchmark.cpp)
target_compile_options(numerics_benchmark PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(numerics_benchmark PRIVATE numfid::numerics benchmark::benchmark)
