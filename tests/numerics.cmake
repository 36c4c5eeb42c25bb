# Block-FMA (tensor-core) model tests. The recorded GPU vectors: a subset in the repository
# (tests/data/tensor-core-vectors, always run) and the full set, optional, at
# $NUMFID_TENSOR_CORE_VECTORS or ../shared/data/tensor-core-vectors beside the checkout
# (its tests skip with a message when it is absent).
set(NUMFID_TENSOR_CORE_DATA
  NUMFID_TENSOR_CORE_SUBSET="${PROJECT_SOURCE_DIR}/tests/data/tensor-core-vectors"
  NUMFID_TENSOR_CORE_FULL="${PROJECT_SOURCE_DIR}/../shared/data/tensor-core-vectors")
# Hand-derived cases, validation, the preset table: well under a second.
numfid_add_test(blockfma_test SOURCES blockfma_test.cpp DEPS numfid::numerics)
# Against the recorded vectors: about a second on the subset, a minute with the full set.
numfid_add_test(blockfma_vectors_test SOURCES blockfma_vectors_test.cpp DEPS numfid::numerics fmt::fmt TIMEOUT 300)
target_compile_definitions(blockfma_vectors_test PRIVATE ${NUMFID_TENSOR_CORE_DATA})
# Against the naive rational implementation (Boost.Multiprecision): random and adversarial inputs.
numfid_add_test(blockfma_naive_test SOURCES blockfma_naive_test.cpp
  DEPS numfid::numerics numfid_test_support Boost::headers fmt::fmt TIMEOUT 300)
# Integer GEMM and requantisation against naive loops, brute force and exact rationals (Boost):
# about a second.
numfid_add_test(int_gemm_test SOURCES int_gemm_test.cpp DEPS numfid::numerics Boost::headers fmt::fmt)
# nvidia-h100-tc's units against mma.sync results recorded on an H200 (tests/data/h200): a second.
numfid_add_test(h200_mma_test SOURCES h200_mma_test.cpp DEPS numfid::numerics numfid::io fmt::fmt)
target_compile_definitions(h200_mma_test PRIVATE NUMFID_H200_DATA="${PROJECT_SOURCE_DIR}/tests/data/h200")
