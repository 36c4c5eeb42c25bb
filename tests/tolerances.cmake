numfid_add_test(tolerances_test SOURCES tolerances_test.cpp DEPS numfid::tolerances)
# The check pipeline as a library (tolerances/check.h).
numfid_add_test(check_test SOURCES check_test.cpp DEPS numfid::tolerances fmt::fmt)
# The claim text form and tensor views (tolerances/claim_text.cpp).
numfid_add_test(claim_text_test SOURCES claim_text_test.cpp DEPS numfid::tolerances fmt::fmt)
# Cooperative cancellation of a long check (tolerances/cancel.h).
numfid_add_test(cancel_test SOURCES cancel_test.cpp DEPS numfid::tolerances)
# Probable defects, the bias rule and the trust checks (tolerances/calibrate.h, verdict.cpp).
numfid_add_test(probable_test SOURCES probable_test.cpp DEPS numfid::tolerances numfid::formats)
# Derived row/elementwise bounds against naive textbook kernels (soundness, sharpness, corpus).
numfid_add_test(row_bounds_test SOURCES row_bounds_test.cpp DEPS numfid::tolerances fmt::fmt)
# The exact matmul oracle at model scale: certified fp64 GEMM vs long accumulator, threads.
numfid_add_test(reference_fast_test SOURCES reference_fast_test.cpp DEPS numfid::tolerances fmt::fmt)
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
