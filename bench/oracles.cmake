# The long accumulator against the MPFR oracle on the same dot products (Google Benchmark;
# figures in docs/performance.md).
add_executable(oracles_benchmark oracles_benchmark.cpp)
target_compile_options(oracles_benchmark PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(oracles_benchmark PRIVATE numfid::oracles benchmark::benchmark)
