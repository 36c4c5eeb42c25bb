# `check matmul` at model scale (bf16 -> fp32, 1024×4096×1024 and 4096³) next to OpenBLAS
# cblas_dgemm on the same shape and thread count (figures: docs/performance.md).
if(OPENBLAS_FOUND)
  add_executable(check_scale_benchmark check_scale_benchmark.cpp)
  target_compile_options(check_scale_benchmark PRIVATE ${NUMFID_WARNINGS})
  target_link_libraries(check_scale_benchmark PRIVATE numfid::tolerances benchmark::benchmark PkgConfig::OPENBLAS)
else()
  message(STATUS "OpenBLAS (pkg-config openblas) not found: check_scale_benchmark is not built")
endif()
