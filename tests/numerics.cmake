# Block-FMA (tensor-core) model tests. The recorded GPU vectors live beside the checkout
# (../shared/data/tensor-core-vectors); the tests skip with a message when they are absent.
numfid_add_test(blockfma_test SOURCES blockfma_test.cpp
  DEPS numfid::numerics numfid_test_support Boost::headers fmt::fmt TIMEOUT 300)
target_compile_definitions(blockfma_test PRIVATE
  NUMFID_TENSOR_CORE_VECTORS="${PROJECT_SOURCE_DIR}/../shared/data/tensor-core-vectors")
