numfid_add_test(profile_test SOURCES profile_test.cpp DEPS numfid::numerics)
target_compile_definitions(profile_test PRIVATE
  NUMFID_TENSOR_CORE_VECTORS="${PROJECT_SOURCE_DIR}/../shared/data/tensor-core-vectors")
