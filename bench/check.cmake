# The work of `numfid check matmul` (oracle + bound + judge) on a 256×4096×256 bf16 matmul,
# whole and split (Google Benchmark; figures in docs/performance.md).
add_executable(check_benchmark check_benchmark.cpp)
target_compile_options(check_benchmark PRIVATE ${NUMFID_WARNINGS})
target_link_libraries(check_benchmark PRIVATE numfid::tolerances numfid::oracles numfid::numerics benchmark::benchmark)
