numfid_add_test(tolerances_test SOURCES tolerances_test.cpp DEPS numfid::tolerances)
# The check pipeline as a library (tolerances/check.h).
numfid_add_test(check_test SOURCES check_test.cpp DEPS numfid::tolerances fmt::fmt)
# The claim text form and tensor views (tolerances/claim_text.cpp).
numfid_add_test(claim_text_test SOURCES claim_text_test.cpp DEPS numfid::tolerances fmt::fmt)
# Cooperative cancellation of a long check (tolerances/cancel.h).
numfid_add_test(cancel_test SOURCES cancel_test.cpp DEPS numfid::tolerances)
# Probable defects, the bias rule and the trust checks (tolerances/calibrate.h, verdict.cpp).
numfid_add_test(probable_test SOURCES probable_test.cpp DEPS numfid::tolerances numfid::formats fmt::fmt)
# Derived row/elementwise bounds against naive textbook kernels (soundness, sharpness, corpus).
numfid_add_test(row_bounds_test SOURCES row_bounds_test.cpp DEPS numfid::tolerances fmt::fmt)
# The row-scale lean rule of layernorm/rmsnorm (docs/verdict.md §8.4): legal naive kernels, scale defects.
numfid_add_test(row_scale_test SOURCES row_scale_test.cpp DEPS numfid::tolerances fmt::fmt)
# The exact matmul oracle at model scale: certified fp64 GEMM vs long accumulator, threads.
numfid_add_test(reference_fast_test SOURCES reference_fast_test.cpp DEPS numfid::tolerances fmt::fmt)
numfid_add_test(large_memory_test SOURCES large_memory_test.cpp DEPS numfid::tolerances)
# Integer GEMMs through the pipeline (tolerances/quant_check.h): legal outputs, each classic bug
# with its signature, the int32 overflow K. About a second.
numfid_add_test(quant_check_test SOURCES quant_check_test.cpp DEPS numfid::tolerances fmt::fmt)
# Scaled float GEMMs (FP8 with DeepSeek-style block scales, promotion) against a naive model and
# long-double references: emulation bit for bit, legal outputs, wrong-block scale, missing promotion.
numfid_add_test(scaled_check_test SOURCES scaled_check_test.cpp DEPS numfid::tolerances fmt::fmt)
# Scaled-gemm profiles (block_scaling:) against the explicit claims they stand for.
numfid_add_test(scaled_profile_test SOURCES scaled_profile_test.cpp DEPS numfid::tolerances fmt::fmt)
# Cross-platform (--ref) checks of integer and scaled claims, and the scaled row-wise dot,
# against naive implementations.
numfid_add_test(quant_cross_test SOURCES quant_cross_test.cpp DEPS numfid::tolerances fmt::fmt)
# The scaled check's fixed-point element sum against Boost.Multiprecision's integers.
numfid_add_test(wide_sum_test SOURCES wide_sum_test.cpp DEPS numfid::tolerances Boost::headers fmt::fmt)
# torch 1.13 CPU outputs of the row/elementwise ops (committed data, tests/data/torch_rows) under
# the derived claims; docs/verdict.md §8.3.
numfid_add_test(torch_rows_test SOURCES torch_rows_test.cpp DEPS numfid::tolerances numfid::io fmt::fmt)
target_compile_definitions(torch_rows_test PRIVATE NUMFID_TORCH_ROWS_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/torch_rows")
# torch 1.13's CPU layer_norm as a naive model, bit for bit against the recorded torch outputs;
# then the rowwise-moments / shifted claim's soundness and sharpness on it.
numfid_add_test(torch_layernorm_model_test SOURCES torch_layernorm_model_test.cpp DEPS numfid::tolerances numfid::io fmt::fmt)
target_compile_definitions(torch_layernorm_model_test PRIVATE NUMFID_TORCH_ROWS_DATA="${CMAKE_CURRENT_SOURCE_DIR}/data/torch_rows")
# The committed torch data regenerate byte for byte (python label; registered when the
# interpreter of cmake/numfid_python.cmake, else /usr/bin/python3, imports torch and numpy).
set(torch_python "${Python3_EXECUTABLE}")
if(NOT torch_python AND EXISTS /usr/bin/python3)
  set(torch_python /usr/bin/python3)
endif()
if(torch_python)
  execute_process(COMMAND ${torch_python} -c "import torch, numpy" RESULT_VARIABLE torch_rc OUTPUT_QUIET ERROR_QUIET)
  if(torch_rc EQUAL 0)
    add_test(NAME torch_rows_data
             COMMAND ${torch_python} ${CMAKE_CURRENT_SOURCE_DIR}/data/torch_rows/make_torch_rows.py --check)
    set_tests_properties(torch_rows_data PROPERTIES LABELS python TIMEOUT 300 ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
  else()
    message(STATUS "torch_rows_data: not registered (${torch_python} cannot import torch and numpy; python3-torch)")
  endif()
endif()
# The model's own output is never a defect under its claim: seeded claims over plans, accumulator
# formats, roundings and flags, and every shipped profile (docs/verdict.md §2).
numfid_add_test(self_consistency_test SOURCES self_consistency_test.cpp DEPS numfid::tolerances fmt::fmt)
# cuBLAS GEMMs recorded on an H200 (tests/data/h200/gemm) under the claims a user states: seconds.
numfid_add_test(h200_gemm_test SOURCES h200_gemm_test.cpp DEPS numfid::tolerances numfid::io fmt::fmt)
target_compile_definitions(h200_gemm_test PRIVATE NUMFID_H200_DATA="${PROJECT_SOURCE_DIR}/tests/data/h200")
# --addend-at: the epilogue's emulation against the MPFR oracle, the bound's soundness on legal
# outputs (cancelling addends, subnormal results, overflowing products) and sharpness.
numfid_add_test(addend_at_test SOURCES addend_at_test.cpp DEPS numfid::tolerances numfid_test_support fmt::fmt)
# --out-rounding rtz|rup|rdn: bit-exact against the claimed rounding (MPFR oracle), the one-sided
# bound's soundness on legal fp32 sums in three orders and its sharpness on other roundings.
numfid_add_test(directed_output_test SOURCES directed_output_test.cpp DEPS numfid::tolerances numfid_test_support fmt::fmt)
# A stack of matrices as A ([..., M, K], one B): the matmul of its rows, field for field.
numfid_add_test(stacked_matmul_test SOURCES stacked_matmul_test.cpp DEPS numfid::tolerances nlohmann_json::nlohmann_json
                fmt::fmt)
