# Emulated bf16 GEMM (numerics/emulate_gemm.cpp fast path) next to OpenBLAS cblas_sgemm on the same
# shape (figures: docs/performance.md). OpenBLAS is a bench-only dependency, found through its
# pkg-config file (Debian libopenblas-dev; FindBLAS would not give the cblas.h include path).
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
if(OPENBLAS_FOUND)
  add_executable(emulate_benchmark emulate_benchmark.cpp)
  target_compile_options(emulate_benchmark PRIVATE ${NUMFID_WARNINGS})
  target_link_libraries(emulate_benchmark PRIVATE numfid::numerics benchmark::benchmark PkgConfig::OPENBLAS)
else()
  message(STATUS "OpenBLAS (pkg-config openblas) not found: emulate_benchmark is not built")
endif()
